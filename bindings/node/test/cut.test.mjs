// A session file that another process cuts short (fs.truncateSync) while it is open, held
// to pi 1.6.0's class. pi loads every entry when it opens a file and answers from memory
// whatever becomes of the file; an append then appends to what is left. The binding maps a
// file of 1 MiB or more and reads entries from it when asked: once the file is cut, the
// entries it has made answer as pi's do, until refresh() or an append takes in the file
// as it is now, and its errors name the file as pi's do.
import assert from 'node:assert/strict'
import { appendFileSync, mkdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'

import { ours, outcome, pi, repo } from './common.mjs'
import { scratch } from './scratch.mjs'

/** Bytes that make a file mapped (1 MiB or more) without changing its session: a blank line. */
const PAD = `${' '.repeat(1_100_000)}\n`

/** A corpus file's text, padded after its header to be mapped when `big`. */
function corpus(name, big) {
  const text = readFileSync(join(repo, 'corpus', 'valid', name), 'utf8')
  if (!big) return text
  const nl = text.indexOf('\n') + 1
  return text.slice(0, nl) + PAD + text.slice(nl)
}

/** A folder for one test (its name with a space and a non-ASCII letter), removed after. */
function folder(t) {
  const root = scratch('pi-cut-')
  const dir = join(root, 'a b é')
  mkdirSync(dir)
  t.after(() => rmSync(root, { recursive: true, force: true }))
  return dir
}

/** What the reading methods answer, each as a value or `{error}`. */
function answers(sm) {
  const ids = sm.getEntries().map((e) => e.id)
  const each = (f) => ids.map((id) => outcome(() => f(id)))
  return {
    entries: outcome(() => sm.getEntries()),
    header: outcome(() => sm.getHeader()),
    count: outcome(() => sm.getEntryCount()),
    leafId: outcome(() => sm.getLeafId()),
    leafEntry: outcome(() => sm.getLeafEntry()),
    branch: outcome(() => sm.getBranch()),
    branchFrom: each((id) => sm.getBranch(id)),
    entry: each((id) => sm.getEntry(id)),
    children: [null, ...ids].map((id) => outcome(() => sm.getChildren(id))),
    label: each((id) => sm.getLabel(id)),
    tree: outcome(() => sm.getTree()),
    contextEntries: outcome(() => sm.buildContextEntries()),
    context: outcome(() => sm.buildSessionContext()),
    name: outcome(() => sm.getSessionName()),
  }
}

const FILES = [
  'branches.jsonl',
  'all-entry-types.jsonl',
  'labels-set-clear-reset.jsonl',
  'compaction-kept-on-path.jsonl',
  'context-edit-latest-wins.jsonl',
  'session-name-latest-in-file-wins.jsonl',
]

test('after another process cuts the file short, the entries handed out answer as pi does', (t) => {
  const dir = folder(t)
  for (const big of [false, true]) {
    for (const name of FILES) {
      const text = corpus(name, big)
      for (const cut of [0, 60, Math.floor(text.length / 2), text.length - 1]) {
        const where = `${name}${big ? ' (mapped)' : ''} cut to ${cut}`
        writeFileSync(join(dir, 'pi.jsonl'), text)
        writeFileSync(join(dir, 'ours.jsonl'), text)
        const theirs = pi.SessionManager.open(join(dir, 'pi.jsonl'))
        const mine = ours.SessionManager.open(join(dir, 'ours.jsonl'))
        mine.getEntries()
        truncateSync(join(dir, 'pi.jsonl'), cut)
        truncateSync(join(dir, 'ours.jsonl'), cut)
        assert.deepStrictEqual(answers(mine), answers(theirs), where)
        // Navigating, as pi's /tree does, and its errors.
        const ids = theirs.getEntries().map((e) => e.id)
        for (const id of [ids[1], 'nope']) {
          assert.deepStrictEqual(
            outcome(() => mine.branch(id)),
            outcome(() => theirs.branch(id)),
            `${where}: branch(${id})`,
          )
          assert.deepStrictEqual(answers(mine), answers(theirs), `${where}: after branch(${id})`)
        }
        mine.resetLeaf()
        theirs.resetLeaf()
        assert.deepStrictEqual(answers(mine), answers(theirs), `${where}: after resetLeaf()`)
      }
    }
  }
})

test('a cut file written back as it was: refresh() finds nothing new, and the leaf stays where it was put', (t) => {
  const dir = folder(t)
  const file = join(dir, 's.jsonl')
  const text = corpus('branches.jsonl', true)
  writeFileSync(file, text)
  const mine = ours.SessionManager.open(file)
  const theirs = pi.SessionManager.open(file)
  mine.getEntries()
  truncateSync(file, 100)
  const id = theirs.getEntries()[1].id
  mine.branch(id)
  theirs.branch(id)
  writeFileSync(file, text)
  assert.equal(mine.refresh(), 0)
  assert.deepStrictEqual(answers(mine), answers(theirs))
})

test('entries whose long strings were never read answer with them still in the file, which then cannot be read', (t) => {
  const dir = folder(t)
  const file = join(dir, 's.jsonl')
  const long = 'x'.repeat(200_000)
  const head = { type: 'session', version: 3, id: 's-cut', timestamp: '2025-01-01T00:00:00.000Z', cwd: '/p' }
  const lines = [head]
  let parentId = null
  for (let i = 0; i < 8; i++) {
    const id = `e${i}`
    const message =
      i % 2 === 0
        ? { role: 'user', content: `${long}${i}`, timestamp: i }
        : { role: 'assistant', content: [{ type: 'text', text: `${long}${i}` }], provider: 'p', model: 'm', timestamp: i }
    lines.push({ type: 'message', id, parentId, timestamp: `2025-01-01T00:00:0${i}.000Z`, message })
    parentId = id
  }
  lines.push({ type: 'label', id: 'l1', parentId, timestamp: '2025-01-01T00:00:09.000Z', targetId: 'e2', label: 'here' })
  lines.push({ type: 'session_info', id: 'n1', parentId: 'l1', timestamp: '2025-01-01T00:00:10.000Z', name: 'cut short' })
  writeFileSync(file, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`)
  const theirs = pi.SessionManager.open(file)
  const mine = ours.SessionManager.open(file)
  const entries = mine.getEntries()
  assert.equal(typeof Object.getOwnPropertyDescriptor(entries[0].message, 'content').get, 'function')
  truncateSync(file, 0)
  const ids = (list) => list.map((e) => e.id)
  const shape = (nodes) => nodes.map((n) => [n.entry.id, n.label, n.labelTimestamp, shape(n.children)])
  assert.deepStrictEqual(ids(mine.getEntries()), ids(theirs.getEntries()))
  assert.deepStrictEqual(ids(mine.getBranch('e5')), ids(theirs.getBranch('e5')))
  assert.deepStrictEqual(ids(mine.buildContextEntries()), ids(theirs.buildContextEntries()))
  assert.deepStrictEqual(shape(mine.getTree()), shape(theirs.getTree()))
  assert.equal(mine.getSessionName(), theirs.getSessionName())
  assert.equal(mine.getLabel('e2'), theirs.getLabel('e2'))
  const context = mine.buildSessionContext()
  const want = theirs.buildSessionContext()
  assert.deepStrictEqual(
    context.messages.map((m) => m.role),
    want.messages.map((m) => m.role),
  )
  assert.deepStrictEqual([context.thinkingLevel, context.model], [want.thinkingLevel, want.model])
  // The context hands on the entries' own messages, their strings still in the file.
  assert.equal(context.messages[0], entries[0].message)
  assert.throws(() => context.messages[0].content, /the session file changed/)
})

test('when not every entry has been made, reading methods say the file changed, never answer from the zeros', (t) => {
  const dir = folder(t)
  const file = join(dir, 's.jsonl')
  writeFileSync(file, corpus('branches.jsonl', true))
  const mine = ours.SessionManager.open(file)
  // Ids indexed after the open are read from the file when looked up.
  const late = { type: 'custom', customType: 'x', data: 1, id: 'late0001', parentId: mine.getLeafId(), timestamp: '2025-03-14T11:00:00.000Z' }
  appendFileSync(file, `${JSON.stringify(late)}\n`)
  assert.equal(mine.refresh(), 1)
  mine.getEntry('late0001')
  truncateSync(file, 0)
  const changed = { message: `${file}: the file changed while it was open (another process rewrote it)` }
  assert.throws(() => mine.getEntry('late0001'), changed)
  assert.throws(() => mine.getBranch(), changed)
  assert.throws(() => mine.getChildren(null), changed)
  assert.throws(() => mine.getTree(), changed)
  assert.throws(() => mine.buildSessionContext(), changed)
  assert.throws(() => mine.getEntries(), changed)
  // What is held in memory still answers.
  assert.equal(mine.getLeafId(), 'late0001')
  assert.equal(mine.getEntryCount(), 12)
})

test('refresh() and an append after the file was cut inside its header name the file as pi does', (t) => {
  const dir = folder(t)
  for (const big of [false, true]) {
    const file = join(dir, `s${big ? '-big' : ''}.jsonl`)
    const text = corpus('branches.jsonl', big)
    writeFileSync(file, text)
    const mine = ours.SessionManager.open(file)
    const before = mine.getEntries()
    truncateSync(file, 50)
    // pi's message for a file that is not a session, with the path as pi prints it.
    const { error } = outcome(() => pi.SessionManager.open(file))
    assert.equal(error, `Error: Session file is not a valid pi session: ${file}`)
    assert.equal(outcome(() => mine.refresh()).error, error, `refresh ${file}`)
    assert.equal(outcome(() => mine.appendMessage({ role: 'user', content: 'hi', timestamp: 1 })).error, error)
    assert.equal(outcome(() => mine.appendCustomEntry('x', {})).error, error)
    // Nothing was written, and the session answers as before.
    assert.equal(readFileSync(file, 'utf8'), text.slice(0, 50))
    assert.deepStrictEqual(mine.getEntries(), before)
  }
})

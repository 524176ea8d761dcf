// The write side and the module's functions against pi 1.6.0's own (a dev-dependency).
//
// One script of calls (every append, branching, new and branched sessions, forks, files
// opened, made and written) runs on pi's class and on the binding, each in its own
// folder; after every step the state each gives (return value or error, entries, header,
// leaf, tree, context, labels, name, the file's bytes) is recorded. The two records must
// be deep-equal (assert.deepStrictEqual, so members set to `undefined` count) once what
// is random in them is renamed by first appearance (entry and session ids), and times
// (ISO and ms: two calls fall in the same ms or not by chance) and the folders replaced. Then the module's functions run on every
// corpus file with the same entry objects given to both.
import assert from 'node:assert/strict'
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { test } from 'node:test'
import { inspect, isDeepStrictEqual } from 'node:util'

import { jsonl, ours, outcome, pi, repo } from './common.mjs'
import { scratch } from './scratch.mjs'

const ISO = /\d{4}-\d\d-\d\dT\d\d[:-]\d\d[:-]\d\d[.-]\d{3}Z/g
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g
const SHORT = /\b[0-9a-f]{8}\b/g

/** Renames what differs between two runs by chance, by first appearance in one record. */
class Renamer {
  names = new Map()
  constructor(root) {
    this.root = root
  }
  #name(kind, s) {
    const key = `${kind}:${s}`
    if (!this.names.has(key)) this.names.set(key, `<${kind}${this.names.size}>`)
    return this.names.get(key)
  }
  text(s) {
    return s
      .replaceAll(this.root, '<root>')
      .replaceAll(this.root.replace(/^[/\\]/, '').replace(/[/\\:]/g, '-'), '<root>')
      .replace(ISO, '<time>')
      .replace(UUID, (u) => this.#name('uuid', u))
      .replace(SHORT, (h) => this.#name('id', h))
      .replace(/\b1\d{12}\b/g, (ms) => (Math.abs(Number(ms) - Date.now()) < 86_400_000 ? '<ms>' : ms))
  }
  /** A deep copy with strings renamed and recent ms times named; `undefined` members kept. */
  value(v, seen = new Set()) {
    if (typeof v === 'string') return this.text(v)
    if (typeof v === 'number') return Math.abs(v - Date.now()) < 86_400_000 ? '<ms>' : v
    if (v === null || typeof v !== 'object') return v
    if (seen.has(v)) return '<cycle>'
    seen.add(v)
    let out
    if (Array.isArray(v)) out = v.map((x) => this.value(x, seen))
    else if (v instanceof Date) out = this.value(v.getTime(), seen)
    else {
      out = {}
      // (Defined, not assigned: a `__proto__` member stays a member.)
      for (const k of Object.keys(v)) {
        Object.defineProperty(out, this.text(k), { value: this.value(v[k], seen), enumerable: true, writable: true, configurable: true })
      }
    }
    seen.delete(v)
    return out
  }
}

/**
 * `assert.deepStrictEqual`, reporting a difference as both values printed (the assert's
 * own diff of large values can exhaust the heap).
 */
function same(actual, expected, what) {
  if (isDeepStrictEqual(actual, expected)) return true
  if (typeof actual === 'string' && typeof expected === 'string') {
    // Texts (a file's bytes): the first line that differs.
    const a = actual.split('\n')
    const e = expected.split('\n')
    let i = 0
    while (i < a.length && a[i] === e[i]) i++
    assert.fail(`${what}, line ${i + 1}\nbinding: ${a[i]}\npi:      ${e[i]}`)
  }
  // The first place that differs, and both values there.
  let a = actual
  let e = expected
  const path = []
  for (;;) {
    if (a === null || e === null || typeof a !== 'object' || typeof e !== 'object') break
    const keys = [...new Set([...Object.keys(a), ...Object.keys(e)])]
    const k = keys.find((k) => !isDeepStrictEqual(a[k], e[k]) || k in a !== k in e)
    if (k === undefined) break
    path.push(k)
    a = a[k]
    e = e[k]
  }
  const show = (v) => inspect(v, { depth: 4, maxArrayLength: 10, maxStringLength: 300 })
  assert.fail(`${what}, at ${path.join('.')}\nbinding: ${show(a)}\npi:      ${show(e)}`)
}


/** Everything the session shows, read through its public methods. */
function state(sm) {
  const file = sm.getSessionFile()
  const entries = sm.getEntries()
  return {
    header: sm.getHeader(),
    id: sm.getSessionId(),
    file,
    persisted: sm.isPersisted(),
    cwd: sm.getCwd(),
    dir: sm.getSessionDir(),
    bytes: file && existsSync(file) ? readFileSync(file, 'utf8') : null,
    entries,
    count: sm.getEntryCount(),
    leaf: sm.getLeafId(),
    leafEntry: sm.getLeafEntry(),
    tree: outcome(() => sm.getTree()),
    branch: outcome(() => sm.getBranch()),
    contextEntries: outcome(() => sm.buildContextEntries()),
    context: outcome(() => sm.buildSessionContext()),
    name: sm.getSessionName(),
    labels: entries.map((e) => sm.getLabel(e.id)),
    roots: sm.getChildren(null),
  }
}

const user = (text, t) => ({ role: 'user', content: [{ type: 'text', text }], timestamp: t })
const assistant = (text, t) => ({
  role: 'assistant',
  content: [{ type: 'text', text }],
  provider: 'anthropic',
  model: 'claude-x',
  usage: { input: 3, output: 4, cacheRead: 0, cacheWrite: 0, totalTokens: 7, cost: { total: 0.01 } },
  stopReason: 'stop',
  timestamp: t,
})

const NEW = Symbol('the session the call made')
const READ_ONLY_OPEN = 'open (read-only until written)'
const V2_TEXT =
  '{"type":"session","version":2,"id":"v2s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/v2"}\n' +
  '{"type":"message","id":"m1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"hookMessage","customType":"h","content":"x","display":true,"timestamp":1}}\n' +
  '{"type":"message","id":"m2","parentId":"m1","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":"y","timestamp":2}}'

/** The script: every call pi's class offers for writing, on `M`'s class, in `root`. */
function script(M, root) {
  const SM = M.SessionManager
  const log = []
  // `sm`: the session whose state to record after the call (`NEW`: the one it made).
  const step = (what, sm, fn, original) => {
    if (process.env.DBG) console.error(what)
    const r = outcome(fn)
    const of = sm === NEW ? (r.error ? undefined : r.value) : sm?.()
    if (process.env.DBG) console.error("done", r.error)
    log.push({ what, r: sm === NEW ? { error: r.error } : r, state: of ? state(of) : undefined, original })
    return r.value
  }
  const dir = join(root, 'sessions')
  let sm = step('create', NEW, () => SM.create('/work/project', dir))
  step('model change (memory only)', () => sm, () => sm.appendModelChange('anthropic', 'claude-x'))
  step('thinking level', () => sm, () => sm.appendThinkingLevelChange('high'))
  step('system message', () => sm, () => sm.appendMessage({ role: 'system', content: 'be brief', timestamp: 1 }))
  const u1 = step('first user message: file written', () => sm, () => sm.appendMessage(user('hello', 2)))
  const a1 = step('assistant', () => sm, () => sm.appendMessage(assistant('hi there', 3)))
  step('custom entry', () => sm, () => sm.appendCustomEntry('ext', { n: 1, nested: { list: [1, 'two'] } }))
  step('custom entry without data', () => sm, () => sm.appendCustomEntry('ext'))
  step('custom message, details undefined', () => sm, () => sm.appendCustomMessageEntry('ext', 'shown', true))
  step('custom message with details', () => sm, () => sm.appendCustomMessageEntry('ext', [{ type: 'text', text: 'x' }], false, { k: 'v' }))
  step('session name with breaks', () => sm, () => sm.appendSessionInfo('  my\r\n\nsession  '))
  step('label', () => sm, () => sm.appendLabelChange(u1, 'important'))
  step('label on a missing entry', () => sm, () => sm.appendLabelChange('nope', 'x'))
  step('usage', () => sm, () => sm.appendUsage('summary', 'anthropic', 'claude-x', { input: 1, output: 2 }, 'note'))
  step('usage without note', () => sm, () => sm.appendUsage('summary', 'anthropic', 'claude-x', { input: 1, output: 2 }))
  step('context edit of a user message', () => sm, () => sm.appendContextEdit(u1, { content: 'edited' }))
  step('context edit of an assistant message (string wrapped)', () => sm, () => sm.appendContextEdit(a1, { content: 'short' }))
  step('context edit: bad replacement', () => sm, () => sm.appendContextEdit(a1, { nope: 1 }))
  step('context edit: missing entry', () => sm, () => sm.appendContextEdit('zzzzzzzz', null))
  const a2 = step('second assistant', () => sm, () => sm.appendMessage(assistant('more', 4)))
  step('compaction records the system message', () => sm, () => sm.appendCompaction('summary', u1, 1234, { files: ['a'] }, true, { input: 1 }))
  step('compaction with defaults', () => sm, () => sm.appendCompaction('again', undefined, 10))
  step('branch back', () => sm, () => sm.branch(u1))
  step('branch to a missing entry', () => sm, () => sm.branch('missing1'))
  step('context edit off the branch', () => sm, () => sm.appendContextEdit(a2, null))
  step('context edit of a label: not editable', () => sm, () => sm.appendContextEdit(u1, null))
  step('append on the branch', () => sm, () => sm.appendMessage(user('other way', 5)))
  step('branch with summary', () => sm, () => sm.branchWithSummary(a1, 'left that', { why: 1 }, false))
  step('branch with summary from the root', () => sm, () => sm.branchWithSummary(null, 'from root'))
  step('branch with summary, missing entry', () => sm, () => sm.branchWithSummary('missing2', 'x'))
  step('label cleared', () => sm, () => sm.appendLabelChange(u1))
  step('label again', () => sm, () => sm.appendLabelChange(a1, 'kept'))
  step('reset leaf, then a new root', () => sm, () => (sm.resetLeaf(), sm.appendMessage(user('new root', 6))))
  step('branched session of a path', () => sm, () => sm.createBranchedSession(a2))
  step('branched session, missing leaf', () => sm, () => sm.createBranchedSession('missing3'))
  step('append to the branched session', () => sm, () => sm.appendMessage(user('after branching', 7)))
  const first = sm.getSessionFile()
  step('new session with a parent', () => sm, () => sm.newSession({ parentSession: first }))
  step('new session with a bad id', () => sm, () => sm.newSession({ id: '-bad' }))
  step('new session with an id', () => sm, () => sm.newSession({ id: 'my.session-1' }))
  const named = step('its first message', () => sm, () => sm.appendMessage(user('named', 8)))
  // Arguments not of the types pi declares: pi's methods take them as they are, or throw.
  step('session name that is a number', () => sm, () => sm.appendSessionInfo(5))
  step('session name undefined', () => sm, () => sm.appendSessionInfo())
  step('session name with a lone surrogate', () => sm, () => sm.appendSessionInfo('\r\n a\ud800b \n\n'))
  step('label on an id that is a number', () => sm, () => sm.appendLabelChange(5, 'x'))
  step('usage with an empty note', () => sm, () => sm.appendUsage('k', 'p', 'm', { input: 1 }, ''))
  step('model change of other types', () => sm, () => sm.appendModelChange(1, { id: [2, null] }))
  step('context edit keeping the replacement whole', () => sm, () => sm.appendContextEdit(named, { content: [{ type: 'text', text: 'y' }], note: 'kept' }))
  step('context edit with undefined', () => sm, () => sm.appendContextEdit(named, undefined))
  step('compaction with a null first kept entry', () => sm, () => sm.appendCompaction('s', null, Number.NaN, undefined, undefined, null))
  step('custom message of other types', () => sm, () => sm.appendCustomMessageEntry(7, null, 'yes'))
  step('branch with summary from an undefined entry', () => sm, () => sm.branchWithSummary(undefined, 'x'))
  step('new session with a null id', () => sm, () => sm.newSession({ id: null }))

  // Files opened, then written.
  const opened = join(root, 'opened.jsonl')
  copyFileSync(join(repo, 'corpus', 'valid', 'branches.jsonl'), opened)
  sm = step('open a file', NEW, () => SM.open(opened))
  step('append to it', () => sm, () => sm.appendMessage(user('appended', 9)))
  step('branch and append', () => sm, () => (sm.branch(sm.getEntries()[1].id), sm.appendThinkingLevelChange('low')))
  // The leaf a read-only open moved to is the parent of its first append.
  sm = step('open it again', NEW, () => SM.open(opened))
  step('branch, then the first append', () => sm, () => (sm.branch(sm.getEntries()[2].id), sm.appendMessage(user('on a branch', 20))))
  const v2 = join(root, 'v2.jsonl')
  writeFileSync(v2, V2_TEXT)
  sm = step(`${READ_ONLY_OPEN} a version-2 file without a final newline`, NEW, () => SM.open(v2, undefined, '/override'), V2_TEXT)
  step('append: migrated and rewritten first', () => sm, () => sm.appendMessage(assistant('v2 reply', 10)))
  // Long texts that are not ASCII (made as UTF-16 ahead of the JavaScript thread, in the
  // order the entry's members are made), one with a lone surrogate, among short ones.
  const long = join(root, 'long-texts.jsonl')
  const text = (n) => `é😀 ${'日本語 text, '.repeat(n)}`
  writeFileSync(
    long,
    [
      '{"type":"session","version":3,"id":"lt","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/lt"}',
      JSON.stringify({ type: 'message', id: 'l1', parentId: null, timestamp: '2025-01-01T00:00:01.000Z', message: { role: 'user', content: text(200), timestamp: 1 } }),
      JSON.stringify({
        type: 'message',
        id: 'l2',
        parentId: 'l1',
        timestamp: '2025-01-01T00:00:02.000Z',
        message: {
          role: 'assistant',
          content: [
            { type: 'text', text: text(300) },
            { type: 'thinking', thinking: 'short é' },
            { type: 'text', text: 'ascii '.repeat(500) },
            { type: 'text', text: `${text(100)}\ud800 lone` },
          ],
          nested: { deep: [[text(150)], { k: text(120) }], after: 'x' },
          timestamp: 2,
        },
      }),
    ].join('\n') + '\n',
  )
  sm = step('open a file of long non-ASCII texts', NEW, () => SM.open(long))
  step('append to it', () => sm, () => sm.appendMessage(user(text(80), 16)))
  // A version-1 file: ids given on opening (random in pi, derived from the file here)
  // are the ones the rewrite on the first append stores, so the new entry's parent is in
  // the file.
  const v1 = join(root, 'v1.jsonl')
  copyFileSync(join(repo, 'corpus', 'valid', 'v1-compaction-first-kept-index.jsonl'), v1)
  const v1Text = readFileSync(v1, 'utf8')
  sm = step(`${READ_ONLY_OPEN} a version-1 file`, NEW, () => SM.open(v1), v1Text)
  step('append: migrated, rewritten, ids kept', () => sm, () => sm.appendMessage(user('after v1', 17)))
  step('a branched session of its leaf', () => sm, () => sm.createBranchedSession(sm.getLeafId()))
  // A header cwd with `..` in it: resolved, as pi's constructor resolves it, in every
  // header made later.
  const dotted = join(root, 'dotted.jsonl')
  writeFileSync(
    dotted,
    `{"type":"session","version":3,"id":"dt","timestamp":"2025-01-01T00:00:00.000Z","cwd":"${root}/a/../b/"}\n`,
  )
  sm = step('open a file whose cwd has ..', NEW, () => SM.open(dotted))
  step('new session, its first message', () => sm, () => (sm.newSession(), sm.appendMessage(user('new', 18))))
  step('branched session: the resolved cwd', () => sm, () => sm.createBranchedSession(sm.getLeafId()))
  // An in-memory session switched to a file: it reads the file and never writes it.
  sm = step('in memory, then set a file', NEW, () => {
    const m = SM.inMemory('/mem')
    m.setSessionFile(opened)
    return m
  })
  step('append: memory only', () => sm, () => sm.appendMessage(user('not written', 19)))
  step('set an empty file: nothing written', () => sm, () => {
    const e = join(root, 'empty-mem.jsonl')
    writeFileSync(e, '')
    sm.setSessionFile(e)
    return readFileSync(e, 'utf8')
  })
  // Entries given in memory with a second header among them (pi: not an entry).
  sm = step('in memory of entries with a second header', NEW, () =>
    SM.inMemory('/mem', undefined, [
      { type: 'session', version: 3, id: 's1', timestamp: '2025-01-01T00:00:00.000Z', cwd: '/mem' },
      { type: 'message', id: 'u1', parentId: null, timestamp: '2025-01-01T00:00:01.000Z', message: { role: 'user', content: 'x', timestamp: 1 } },
      { type: 'session', version: 3, id: 's2', timestamp: '2025-01-01T00:00:02.000Z', cwd: '/mem' },
    ]),
  )
  step('non-string ids: branch and getBranch', () => sm, () => [outcome(() => sm.branch(5)), sm.getBranch(5)])
  const missing = join(root, 'later', 'missing.jsonl')
  sm = step('open a missing file', NEW, () => SM.open(missing, join(root, 'later')))
  step('model change: no file yet', () => sm, () => sm.appendModelChange('p', 'm'))
  step('user message: the file is made', () => sm, () => sm.appendMessage(user('first', 11)))
  const empty = join(root, 'empty.jsonl')
  writeFileSync(empty, '')
  sm = step('open an empty file: a header is written', NEW, () => SM.open(empty))
  const junk = join(root, 'junk.jsonl')
  writeFileSync(junk, 'not json\n{"type":"message","id":"x"}\n')
  step('open a file with no header', null, () => SM.open(junk))

  // In memory.
  sm = step('in memory', NEW, () => SM.inMemory('/mem'))
  step('in memory: messages', () => sm, () => [sm.appendMessage(user('m', 12)), sm.appendMessage(assistant('n', 13))])
  step('in memory: branched session', () => sm, () => sm.createBranchedSession(sm.getLeafId()))
  sm = step('in memory with an id', NEW, () => SM.inMemory('/mem', { id: 'fixed-id' }))
  step('in memory with a bad id', null, () => SM.inMemory('/mem', { id: 'bad id' }))
  const given = pi.loadEntriesFromFile(join(repo, 'corpus', 'valid', 'branches.jsonl'))
  sm = step('in memory of entries with a header', NEW, () => SM.inMemory('/mem', undefined, structuredClone(given)))
  step('append to them', () => sm, () => sm.appendMessage(user('more', 14)))
  sm = step('in memory of entries without a header', NEW, () => SM.inMemory('/mem', { id: 'hdr' }, structuredClone(given.slice(1))))

  // Folders: recent, by id, forks.
  const proj = join(root, 'proj')
  mkdirSync(proj)
  process.env.PI_CODING_AGENT_DIR = join(root, 'agent')
  try {
    sm = step('continue recent: none, a new one', NEW, () => SM.continueRecent(proj))
    step('its message', () => sm, () => sm.appendMessage(user('recent', 15)))
    const id = sm.getSessionId()
    sm = step('continue recent: that one', NEW, () => SM.continueRecent(proj))
    step('find by id', null, () => SM.findById(proj, id))
    step('find by id: none', null, () => SM.findById(proj, 'nope'))
    step('find by id in a custom folder', null, () => SM.findById(proj, id, dirname(sm.getSessionFile())))
    step('default folder', null, () => M.getDefaultSessionDir(proj))
    step('most recent', null, () => M.findMostRecentSession(dirname(sm.getSessionFile())))
    step('most recent of another cwd', null, () => M.findMostRecentSession(dirname(sm.getSessionFile()), '/elsewhere'))
    sm = step('fork from', NEW, () => SM.forkFrom(opened, '/target', join(root, 'forks')))
    step('fork from a missing file', null, () => SM.forkFrom(join(root, 'none.jsonl'), '/target', join(root, 'forks')))
    step('fork with a bad id', null, () => SM.forkFrom(opened, '/target', join(root, 'forks'), { id: 'a b' }))
    sm = step('fork with an id', NEW, () => SM.forkFrom(opened, '/target', join(root, 'forks'), { id: 'forked' }))
    step('set another file', () => sm, () => sm.setSessionFile(v2))
  } finally {
    delete process.env.PI_CODING_AGENT_DIR
  }
  return log
}

test('every write call gives what pi 1.6.0 gives, and writes the same bytes', () => {
  const run = (M, name) => {
    const root = scratch(`pi-session-write-${name}-`)
    const renamer = new Renamer(root)
    return script(M, root).map((s) => {
      return renamer.value(s)
    })
  }
  const theirs = run(pi, 'pi')
  const mine = run(ours, 'ours')
  assert.equal(mine.length, theirs.length)
  for (let i = 0; i < theirs.length; i++) {
    // Key by key, so that a difference is reported small.
    const t = theirs[i]
    const m = mine[i]
    same(m.r, t.r, `step ${i} (${t.what}): result`)
    for (const k of new Set([...Object.keys(t.state ?? {}), ...Object.keys(m.state ?? {})])) {
      // The one difference by design: pi's open rewrites an old-format file (and ends
      // its last line); the binding's open writes nothing until the first append.
      if (k === 'bytes' && t.what.startsWith(READ_ONLY_OPEN)) {
        same(m.state.bytes, m.original, `step ${i} (${t.what}): the file is as it was`)
        continue
      }
      same(m.state?.[k], t.state?.[k], `step ${i} (${t.what}): ${k}`)
    }
  }
})

test('a write into a file that exists already fails as pi fails, and changes nothing', () => {
  const failures = []
  for (const M of [pi, ours]) {
    const root = scratch('pi-session-exists-')
    const sm = M.SessionManager.create('/p', root)
    // The file pi will create on the first message is already there.
    const file = sm.getSessionFile()
    writeFileSync(file, 'someone else\n')
    try {
      sm.appendMessage(user('x', 1))
      failures.push('no error')
    } catch (e) {
      // Node's fs error: the same text, code, errno and call, the file as its path.
      failures.push({ message: e.message.replace(file, '<file>'), code: e.code, errno: e.errno, syscall: e.syscall, path: e.path === file })
    }
    assert.equal(readFileSync(file, 'utf8'), 'someone else\n')
    assert.equal(sm.getEntries().length, 0, 'the entry that was not written is not kept')
    assert.equal(sm.getLeafId(), null)
  }
  assert.deepStrictEqual(failures[1], failures[0])
})


test("the module's functions give what pi's give, on every corpus file", () => {
  const files = [...jsonl(join(repo, 'corpus', 'valid')), ...jsonl(join(repo, 'corpus', 'malformed'))].sort()
  const work = scratch('pi-session-fns-')
  let compared = 0
  let endless = 0
  let deep = 0
  for (const file of files) {
    const a = join(work, `a-${basename(file)}`)
    const b = join(work, `b-${basename(file)}`)
    copyFileSync(file, a)
    copyFileSync(file, b)
    const loaded = pi.loadEntriesFromFile(a)
    const where = file.slice(repo.length + 1)
    const got = outcome(() => ours.loadEntriesFromFile(b))
    try {
      same(got, { value: loaded }, `loadEntriesFromFile ${where}`)
    } catch (e) {
      // Nested deeper than the comparison's recursion: left out, and counted.
      if (!(e instanceof RangeError)) throw e
      deep++
      continue
    }
    // (pi adds a missing final newline when it reads.)
    assert.equal(readFileSync(b, 'utf8'), readFileSync(a, 'utf8'), `file after loadEntriesFromFile ${where}`)
    const text = readFileSync(file, 'utf8')
    assert.deepStrictEqual(ours.parseSessionEntries(text), pi.parseSessionEntries(text), `parseSessionEntries ${where}`)
    if (loaded.length === 0) continue
    const version = loaded[0].version ?? 1
    if (version >= 3) {
      const entries = loaded.filter((e) => e && e.type !== 'session')
      // (An id that is an object is looked up by identity in pi's map; the binding takes
      // ids as JSON values, so such a leaf is not asked: see README, differences.)
      const leaves = [undefined, null, ...entries.slice(-3).map((e) => e && e.id)].filter((l) => l === null || typeof l !== 'object')
      for (const leaf of leaves) {
        for (const fn of ['buildSessionContext', 'buildContextEntries']) {
          const got = outcome(() => ours[fn](entries, leaf))
          // A parent cycle: pi's walk never returns (it grows its path until the process
          // dies), the binding's throws at once. pi is not asked.
          if (got.error && /non-terminating/.test(got.error)) {
            endless++
            continue
          }
          same(got, outcome(() => pi[fn](entries, leaf)), `${fn} ${where} leaf ${leaf}`)
        }
      }
      assert.strictEqual(ours.getLatestCompactionEntry(entries), pi.getLatestCompactionEntry(entries))
    } else {
      // Migration in place: ids are random in both, so compare renamed.
      const x = structuredClone(loaded)
      const y = structuredClone(loaded)
      const want = outcome(() => pi.migrateSessionEntries(x))
      same(outcome(() => ours.migrateSessionEntries(y)), want, `migrateSessionEntries ${where}`)
      same(new Renamer(work).value(y), new Renamer(work).value(x), `migrateSessionEntries ${where}: entries`)
    }
    compared++
  }
  assert.ok(compared >= 100, `compared ${compared}`)
  assert.ok(endless < compared, `${endless} calls where pi never returns`)
  assert.ok(deep <= 3, `${deep} files too deep to compare`)
})

test('refresh() takes in what another process appended, as a fresh open of the file sees it', () => {
  const root = scratch('pi-session-refresh-')
  const file = join(root, 's.jsonl')
  copyFileSync(join(repo, 'corpus', 'valid', 'branches.jsonl'), file)
  const sm = ours.SessionManager.open(file)
  const before = sm.getEntries()
  assert.equal(sm.refresh(), 0, 'nothing new yet')
  // Another writer: pi's class appends two entries, then half a line is still being written.
  const other = pi.SessionManager.open(file)
  other.appendMessage(user('from elsewhere', 1))
  other.appendModelChange('p', 'm')
  writeFileSync(file, readFileSync(file, 'utf8') + '{"type":"message","id":"torn"', 'utf8')
  assert.equal(sm.refresh(), 2)
  const fresh = pi.SessionManager.open(join(root, 's.jsonl'))
  const entries = sm.getEntries()
  assert.strictEqual(entries[0], before[0], 'entries made before are the same objects')
  same(entries, fresh.getEntries().slice(0, entries.length), 'entries after refresh')
  same(sm.getLeafId(), other.getLeafId(), 'the leaf moves to the last entry')
  same(sm.buildSessionContext(), other.buildSessionContext(), 'context after refresh')
})

test('refresh() after the file was replaced reads it anew', () => {
  const root = scratch('pi-session-replaced-')
  const file = join(root, 's.jsonl')
  copyFileSync(join(repo, 'corpus', 'valid', 'branches.jsonl'), file)
  const sm = ours.SessionManager.open(file)
  sm.getEntries()
  // Another file, renamed over this one (what a rewrite does).
  const other = join(root, 'other.jsonl')
  copyFileSync(join(repo, 'corpus', 'valid', 'all-entry-types.jsonl'), other)
  renameSync(other, file)
  sm.refresh()
  const fresh = pi.SessionManager.open(file)
  same(sm.getEntries(), fresh.getEntries(), 'entries after a replacement')
  for (const e of fresh.getEntries()) same(sm.getEntry(e.id), fresh.getEntry(e.id), `getEntry(${e.id})`)
  same(sm.getBranch(), fresh.getBranch(), 'branch after a replacement')
})

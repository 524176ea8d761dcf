// Long strings (64 KiB of JSON or more: images, long tool outputs) stay in the file until
// read: each is an accessor member that reads it on first access and then holds it as a
// plain value. These tests hold such entries to pi 1.6.0's objects, and check what
// happens when the file changes under them.
import assert from 'node:assert/strict'
import { appendFileSync, readFileSync, renameSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'

import { ours, pi } from './common.mjs'
import { scratch } from './scratch.mjs'

const LONG = 64 << 10

/**
 * A v3 session whose entries hold long strings of every kind a file can hold (over 1 MiB
 * in all: smaller files are read whole, and their strings made with their entries).
 */
function sessionText() {
  const base64 = 'iVBORw0KGgo'.repeat(100_000)
  // Escapes, non-ASCII, a lone surrogate, a quote and a backslash: decoded as JSON.parse does.
  const hostile = `line\\n\\"quoted\\" \\\\ é ✓ \\ud83d 😀 ${'x'.repeat(LONG)}\\u0000end`
  const entries = [
    { type: 'session', version: 3, id: 's-lazy', timestamp: '2025-01-01T00:00:00.000Z', cwd: '/p' },
    {
      type: 'message',
      id: 'a1',
      parentId: null,
      timestamp: '2025-01-01T00:00:01.000Z',
      message: { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image', data: base64, mimeType: 'image/png' }], timestamp: 1 },
    },
    {
      type: 'message',
      id: 'a2',
      parentId: 'a1',
      timestamp: '2025-01-01T00:00:02.000Z',
      message: { role: 'toolResult', toolCallId: 'c1', toolName: 'read', content: [{ type: 'text', text: 'PLACEHOLDER' }], isError: false, timestamp: 2 },
    },
    // A long string as an array's element and as `__proto__`: made at once.
    { type: 'custom', id: 'a3', parentId: 'a2', timestamp: '2025-01-01T00:00:03.000Z', customType: 'x', data: { list: [base64] } },
  ]
  return `${entries
    .map((e) => JSON.stringify(e))
    .join('\n')
    .replace('"PLACEHOLDER"', `"${hostile}"`)
    .replace('"data":{"list"', '"data":{"__proto__":"' + base64 + '","list"')}\n`
}

function tempFile(text) {
  const dir = scratch('pi-lazy-')
  const file = join(dir, 's.jsonl')
  writeFileSync(file, text)
  return { dir, file }
}

test('entries with long strings equal pi 1.6.0 entries, and hold them as accessors until read', () => {
  const { dir, file } = tempFile(sessionText())
  try {
    const theirs = pi.SessionManager.open(file)
    const mine = ours.SessionManager.open(file)
    const entries = mine.getEntries()
    const image = entries[0].message.content[1]
    assert.equal(typeof Object.getOwnPropertyDescriptor(image, 'data').get, 'function')
    assert.deepEqual(Object.keys(image), ['type', 'data', 'mimeType'])
    // The context's messages are the entries' own objects, long strings still in the file.
    const context = mine.buildSessionContext()
    assert.equal(context.messages[0], entries[0].message)
    assert.deepStrictEqual(context, theirs.buildSessionContext())
    assert.deepStrictEqual(entries, theirs.getEntries())
    assert.equal(JSON.stringify(entries), JSON.stringify(theirs.getEntries()))
    // Read once: a plain data property from then on.
    assert.deepEqual(Object.getOwnPropertyDescriptor(image, 'data'), {
      value: theirs.getEntries()[0].message.content[1].data,
      writable: true,
      enumerable: true,
      configurable: true,
    })
    // Array elements and `__proto__` members are strings at once, as JSON.parse makes them.
    const custom = entries[2]
    assert.equal(typeof Object.getOwnPropertyDescriptor(custom.data.list, '0').value, 'string')
    assert.equal(typeof Object.getOwnPropertyDescriptor(custom.data, '__proto__').value, 'string')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a long string assigned before it is read, or on a frozen entry, behaves as a plain value', () => {
  const { dir, file } = tempFile(sessionText())
  try {
    const mine = ours.SessionManager.open(file)
    const [first, second] = mine.getEntries()
    first.message.content[1].data = 'replaced'
    assert.equal(first.message.content[1].data, 'replaced')
    assert.deepEqual(Object.getOwnPropertyDescriptor(first.message.content[1], 'data').value, 'replaced')
    const text = second.message.content[0]
    Object.freeze(text)
    const theirs = pi.SessionManager.open(file).getEntries()[1].message.content[0].text
    assert.equal(text.text, theirs)
    assert.equal(text.text, theirs)
    assert.equal(structuredClone(second).message.content[0].text, theirs)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('long strings handed out read the bytes they came from after appends and after the file is replaced', () => {
  const text = sessionText()
  const { dir, file } = tempFile(text)
  try {
    const want = pi.SessionManager.open(file).getEntries()
    const mine = ours.SessionManager.open(file)
    const entries = mine.getEntries()
    appendFileSync(file, `${JSON.stringify({ type: 'label', id: 'a4', parentId: 'a3', timestamp: '2025-01-01T00:00:04.000Z', targetId: 'a1', label: 'x' })}\n`)
    mine.refresh()
    // Replaced (written elsewhere, renamed over): the objects handed out keep the old file's.
    writeFileSync(`${file}.new`, text.replaceAll('iVBORw0KGgo', 'AAAAAAAAAAA'))
    renameSync(`${file}.new`, file)
    mine.refresh()
    assert.deepStrictEqual(entries, want)
    // Entries made after the refresh are the new file's.
    assert.match(mine.getEntries()[0].message.content[1].data, /^AAAA/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a long string whose file was cut short throws a clear error when read, and the process lives', () => {
  const text = sessionText()
  const { dir, file } = tempFile(text)
  try {
    const entries = ours.SessionManager.open(file).getEntries()
    truncateSync(file, 100)
    assert.throws(() => entries[1].message.content[0].text, /the session file changed/)
    // Written again in place, whole: refused still (a rewrite in place is not taken for
    // the bytes that were read).
    writeFileSync(file, text)
    assert.throws(() => entries[0].message.content[1].data, /the session file changed/)
    assert.equal(readFileSync(file, 'utf8'), text)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

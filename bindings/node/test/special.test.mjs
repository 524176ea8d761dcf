// Issue #43: the binding never replaces what is not a regular file. `open`, `create`,
// `setSessionFile`, `forkFrom` and `createBranchedSession` on a symlink to a FIFO, a
// socket, a folder and (as root) a private character device `c 1 3` made in a temporary
// folder (never the host's /dev): each call throws, and each special file is what it was
// (type, device number, inode) with nothing left beside it. pi's own class would read a
// link to /dev/zero until memory runs out and block on a FIFO; the cases run in a child
// process under a time limit, so a hang fails the test instead of stalling it.
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { lstatSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { scratch } from './scratch.mjs'

const index = fileURLToPath(new URL('../index.js', import.meta.url))

const HEADER = '{"type":"session","version":3,"id":"01900000-0000-7000-8000-000000000001","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}\n'
const ENTRY = '{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}\n'

/** Type, device number and inode of what is at `p` (not followed). */
function identity(p) {
  const s = lstatSync(p)
  const type = s.isFIFO() ? 'fifo' : s.isCharacterDevice() ? 'char' : s.isSocket() ? 'socket' : s.isDirectory() ? 'dir' : s.isSymbolicLink() ? 'link' : 'file'
  return { type, rdev: s.rdev, ino: s.ino }
}

// What the child runs: each call on each link, its error (or 'no error') by case.
const CASES = `
const { SessionManager } = require(${JSON.stringify(index)})
const [links, regular, scratch] = JSON.parse(process.argv[1])
const user = { role: 'user', content: 'hi', timestamp: 1 }
const assistant = { role: 'assistant', content: [{ type: 'text', text: 'yo' }], api: 'x', provider: 'x', model: 'm', usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: 'stop', timestamp: 2 }
const out = {}
function attempt(name, f) {
  try { f(); out[name] = 'no error' } catch (e) { out[name] = String(e && e.message) }
}
for (const [kind, link] of Object.entries(links)) {
  attempt(kind + ': open', () => SessionManager.open(link))
  attempt(kind + ': setSessionFile', () => SessionManager.create('/p', scratch).setSessionFile(link))
  attempt(kind + ': forkFrom (source)', () => SessionManager.forkFrom(link, '/q', scratch))
  if (kind !== 'folder') {
    attempt(kind + ': create (session dir)', () => {
      const sm = SessionManager.create('/p', link)
      sm.appendMessage(user)
      sm.appendMessage(assistant)
    })
    attempt(kind + ': forkFrom (session dir)', () => SessionManager.forkFrom(regular, '/q', link))
    attempt(kind + ': createBranchedSession (session dir)', () => {
      const sm = SessionManager.open(regular, link)
      sm.createBranchedSession(sm.getLeafId())
    })
  }
}
process.stdout.write(JSON.stringify(out))
`

test('no call of the binding replaces a FIFO, a socket, a folder or a device', async (t) => {
  const root = scratch('pi-session-special-')
  const sp = join(root, 'specials')
  mkdirSync(sp)
  const specials = {}
  specials.fifo = join(sp, 'fifo')
  execFileSync('mkfifo', [specials.fifo])
  specials.socket = join(sp, 'sock')
  const server = createServer()
  await new Promise((ok) => server.listen(specials.socket, ok))
  specials.folder = join(sp, 'folder')
  mkdirSync(specials.folder)
  const dev = join(sp, 'null')
  try {
    execFileSync('mknod', ['-m', '666', dev, 'c', '1', '3'], { stdio: 'ignore' })
    specials.device = dev
  } catch {
    t.diagnostic('no character device case here: mknod c 1 3 needs root')
  }
  const links = {}
  for (const [kind, p] of Object.entries(specials)) {
    links[kind] = join(sp, `link-${kind}`)
    symlinkSync(p, links[kind])
  }
  const before = Object.fromEntries(Object.entries(specials).map(([k, p]) => [k, identity(p)]))
  const names = readdirSync(sp).sort()
  const spare = join(root, 'spare')
  mkdirSync(spare)
  const regular = join(root, 's.jsonl')
  writeFileSync(regular, HEADER + ENTRY)

  const r = spawnSync(process.execPath, ['-e', CASES, JSON.stringify([links, regular, spare])], {
    timeout: 60_000,
    encoding: 'utf8',
  })
  assert.equal(r.error, undefined, `the calls hung or failed to run: ${r.error} ${r.stderr}`)
  assert.equal(r.status, 0, r.stderr)
  const results = JSON.parse(r.stdout)
  for (const [name, outcome] of Object.entries(results)) {
    assert.notEqual(outcome, 'no error', `${name}: no error`)
    t.diagnostic(`${name}: ${outcome}`)
  }
  for (const kind of ['fifo', 'socket', 'device']) {
    if (!links[kind]) continue
    // The readers' words, not a hang or a header written into it.
    assert.match(results[`${kind}: open`], /not a regular file/, kind)
  }
  const after = Object.fromEntries(Object.entries(specials).map(([k, p]) => [k, identity(p)]))
  assert.deepStrictEqual(after, before)
  assert.deepStrictEqual(readdirSync(sp).sort(), names, 'nothing left beside them')
  assert.deepStrictEqual(readdirSync(specials.folder), [], 'nothing written into the folder')
  for (const kind of Object.keys(links)) assert.equal(identity(links[kind]).type, 'link')
  // (Node removes the socket's name as it closes the server: only now.)
  server.close()
})

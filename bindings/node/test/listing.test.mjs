// list() and listAll() against pi 1.6.0's own on the listing corpus (project folders,
// a flat folder, symlinks, a dangling link, a loop, a stray file) and the demo tree:
// the same sessions (deep-equal), the same progress counts, the same sessions in the
// final partial list, the same abort. (pi's partial lists depend on which of its
// concurrent reads finishes first: only the last is compared, and as a set.)
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { scratch } from './scratch.mjs'

const require = createRequire(import.meta.url)
const here = dirname(fileURLToPath(import.meta.url))
const repo = join(here, '..', '..', '..')
const piModule = join(here, '..', 'node_modules', '@earendil-works', 'pi-coding-agent', 'dist', 'core', 'session-manager.js')
const pi = await import(pathToFileURL(piModule).href)
const ours = require('../index.js')
const listing = join(repo, 'corpus', 'listing')

/**
 * Sessions with each Date as its time value: assert compares two invalid dates (a
 * header time that does not parse) as different, even pi's against pi's.
 */
function norm(sessions) {
  return sessions?.map((s) => ({ ...s, created: s.created.getTime(), modified: s.modified.getTime() }))
}

/** The sessions and what the progress callback was given. */
async function run(SessionManager, call) {
  const calls = []
  const sessions = await call(SessionManager, (loaded, total, partial) => calls.push([loaded, total, partial]))
  assert.ok(sessions.every((x) => x.created instanceof Date && x.modified instanceof Date))
  return {
    sessions: norm(sessions),
    counts: calls.map(([l, t]) => [l, t]),
    // (Sessions of the same time are in the order pi's reads finished: compared as a set.)
    last: norm(calls.at(-1)?.[2])?.sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0)),
  }
}

async function same(what, call) {
  const a = await run(pi.SessionManager, call)
  const b = await run(ours.SessionManager, call)
  assert.deepStrictEqual(b.sessions, a.sessions, `${what}: sessions`)
  assert.deepStrictEqual(b.counts, a.counts, `${what}: progress counts`)
  assert.deepStrictEqual(b.last, a.last, `${what}: last partial list`)
  return a.sessions.length
}

function withAgentDir(dir, fn) {
  return async () => {
    const before = process.env.PI_CODING_AGENT_DIR
    process.env.PI_CODING_AGENT_DIR = dir
    try {
      await fn()
    } finally {
      if (before === undefined) delete process.env.PI_CODING_AGENT_DIR
      else process.env.PI_CODING_AGENT_DIR = before
    }
  }
}

test(
  'listAll() over a sessions root',
  withAgentDir(join(listing, 'agent'), async () => {
    assert.ok((await same('listAll', (S, p) => S.listAll(p))) > 5)
    await same('listAll without progress', (S) => S.listAll())
  }),
)

test(
  'listAll() over the demo tree',
  withAgentDir(join(repo, 'corpus', 'demo'), async () => {
    assert.equal(await same('listAll', (S, p) => S.listAll(p)), 6)
  }),
)

test('listAll(dir) over a flat folder', async () => {
  assert.equal(await same('listAll(flat)', (S, p) => S.listAll(join(listing, 'flat'), p)), 7)
})

test(
  'list(cwd, sessionDir)',
  withAgentDir(join(listing, 'agent'), async () => {
    const root = join(listing, 'agent', 'sessions')
    for (const [dir, cwd] of [
      ['--home-u-proj-a--', '/home/u/proj-a'],
      ['--home-u-proj-b--', '/home/u/proj-b'],
      ['--home-u-linked--', '/home/u/linked'],
      ['--home-u-nope--', '/home/u/nope'],
    ]) {
      await same(`list(${cwd})`, (S, p) => S.list(cwd, join(root, dir), p))
    }
    for (const cwd of ['/home/u/proj-a', '/home/u/proj-b']) {
      await same(`list(${cwd}, flat)`, (S, p) => S.list(cwd, join(listing, 'flat'), p))
    }
  }),
)

test('an aborted signal rejects as pi rejects', async () => {
  const reason = async (S) => {
    const c = new AbortController()
    c.abort()
    try {
      await S.listAll(join(listing, 'flat'), () => {}, c.signal)
      return 'resolved'
    } catch (e) {
      return `${e.name}: ${e.message}`
    }
  }
  assert.equal(await reason(ours.SessionManager), await reason(pi.SessionManager))
})

test('a listing from a warm cache reads texts when asked, and they are pi\'s', async () => {
  const { cpSync } = await import('node:fs')
  const work = scratch('pi-session-lazy-')
  const dir = join(work, 'demo')
  cpSync(join(repo, 'corpus', 'demo', 'sessions'), dir, { recursive: true })
  const before = process.env.PI_SESSION_CACHE_DIR
  process.env.PI_SESSION_CACHE_DIR = join(work, 'cache')
  try {
    // Files changed in the last 2 s are read again (the cache's racy window): wait it out,
    // list once to fill the cache, then list from it.
    await new Promise((r) => setTimeout(r, 2100))
    await ours.SessionManager.listAll(join(dir, '--home-user-proj-1--'))
    const want = await pi.SessionManager.listAll(join(dir, '--home-user-proj-1--'))
    const got = await ours.SessionManager.listAll(join(dir, '--home-user-proj-1--'))
    const lazy = got.filter((s) => typeof Object.getOwnPropertyDescriptor(s, 'allMessagesText').get === 'function')
    assert.ok(got.length >= 2)
    assert.equal(lazy.length, got.length, 'every text is left in the cache until read')
    assert.deepStrictEqual(norm(got), norm(want))
    assert.ok(lazy.every((s) => typeof Object.getOwnPropertyDescriptor(s, 'allMessagesText').value === 'string'))
  } finally {
    if (before === undefined) delete process.env.PI_SESSION_CACHE_DIR
    else process.env.PI_SESSION_CACHE_DIR = before
  }
})

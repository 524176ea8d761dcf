// follow() and followLatest(): another process appends to a session (whole lines, a line
// torn in two writes), rewrites it, deletes it and makes it again, or starts a newer
// session of the project; a mirror kept from the events ends, each time, equal to what
// SessionManager.open reads of the file then.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ours, repo } from './common.mjs'
import { scratch } from './scratch.mjs'

const lines = readFileSync(join(repo, 'corpus', 'pig', 'blocks.jsonl'), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => l + '\n')

/** Write from another process, as pi does: `append` or `write` (a file made anew). */
function other(how, file, text) {
  const fn = how === 'append' ? 'appendFileSync' : 'writeFileSync'
  execFileSync(process.execPath, ['-e', `require('fs').${fn}(process.argv[1], process.argv[2])`, file, text])
}

/** A mirror of a followed session, as a dashboard keeps one, and every event's type. */
function mirror(follower) {
  const m = { header: null, entries: [], events: [] }
  const seen = (e) => m.events.push(e.type === 'start' ? `start:${e.why}` : e.type)
  follower.on('start', (e) => {
    seen(e)
    m.header = e.header
    m.entries = []
  })
  follower.on('entries', (e) => {
    seen(e)
    m.entries.push(...e.entries)
  })
  follower.on('gone', (e) => {
    seen(e)
    m.header = null
    m.entries = []
  })
  return m
}

async function until(what, ok) {
  const end = Date.now() + 10_000
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** What pi reads of the file now. */
function read(file) {
  const sm = ours.SessionManager.open(file)
  return { header: sm.getHeader(), entries: sm.getEntries() }
}

function tmp() {
  return scratch('pi-session-follow-')
}

test('a mirror follows appends, torn lines, a rewrite and a file made again', async () => {
  const dir = tmp()
  const file = join(dir, 's.jsonl')
  writeFileSync(file, lines.slice(0, 2).join(''))
  const f = ours.follow(file)
  try {
    const m = mirror(f)
    const same = () => m.header && JSON.stringify({ header: m.header, entries: m.entries }) === JSON.stringify(read(file))
    await until('the first entry', () => m.entries.length === 1)
    assert.ok(same())

    other('append', file, lines[2])
    await until('a whole line', () => m.entries.length === 2)
    assert.ok(same())

    // A line torn in two writes is handed out once, when its end is written.
    const cut = Math.floor(lines[3].length / 2)
    other('append', file, lines[3].slice(0, cut))
    await new Promise((r) => setTimeout(r, 300))
    assert.equal(m.entries.length, 2, 'half a line is no entry')
    other('append', file, lines[3].slice(cut))
    await until('the torn line', () => m.entries.length === 3)
    assert.ok(same())

    // Replaced by a rename (as `recover` writes): read again from the start.
    writeFileSync(join(dir, 'new'), lines.slice(0, 3).join(''))
    renameSync(join(dir, 'new'), file)
    await until('the rewrite', () => m.events.includes('start:rewritten') && m.entries.length === 2)
    assert.ok(same())

    unlinkSync(file)
    await until('the delete', () => m.events.at(-1) === 'gone')
    other('write', file, lines.join(''))
    await until('the file made again', () => m.events.includes('start:recreated') && m.entries.length === lines.length - 1)
    assert.ok(same())
    assert.equal(m.events[0], 'start:first')
  } finally {
    f.close()
    rmSync(dir, { recursive: true, force: true })
  }
})

test('onlyNew hands out only what is appended; for await ends when left', async () => {
  const dir = tmp()
  const file = join(dir, 's.jsonl')
  writeFileSync(file, lines.slice(0, 3).join(''))
  const f = ours.follow(file, { onlyNew: true })
  try {
    setTimeout(() => other('append', file, lines[3]), 200)
    const got = []
    for await (const e of f) {
      got.push(e)
      if (e.type === 'entries') break
    }
    assert.deepEqual(got.map((e) => e.type), ['entries'], 'no start: what was there is skipped')
    assert.deepEqual(got[0].entries, [JSON.parse(lines[3])])
    assert.equal(got[0].file, file)
    assert.ok(f.closed, 'leaving the loop closed the follower')
  } finally {
    f.close()
    rmSync(dir, { recursive: true, force: true })
  }
})

test('followLatest switches to the newer session pi starts', async () => {
  const dir = tmp()
  const sessions = join(dir, 'sessions')
  mkdirSync(sessions)
  const header = (id, ts) => JSON.stringify({ type: 'session', version: 3, id, timestamp: ts, cwd: dir }) + '\n'
  const first = join(sessions, '2026-01-01T00-00-00-000Z_a.jsonl')
  writeFileSync(first, header('a', '2026-01-01T00:00:00.000Z') + lines[1])
  const f = ours.followLatest(dir, { sessionDir: sessions })
  try {
    const m = mirror(f)
    await until('the first session', () => m.header && m.header.id === 'a' && m.entries.length === 1)
    const second = join(sessions, '2026-01-02T00-00-00-000Z_b.jsonl')
    other('write', second, header('b', '2026-01-02T00:00:00.000Z') + lines[1] + lines[2])
    await until('the switch', () => m.header && m.header.id === 'b' && m.entries.length === 2)
    assert.ok(m.events.includes('start:switched'), m.events.join(' '))
    assert.deepEqual({ header: m.header, entries: m.entries }, read(second))
  } finally {
    f.close()
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a file that is no session stops the follower with pi\'s error', async () => {
  const dir = tmp()
  const file = join(dir, 's.jsonl')
  writeFileSync(file, lines[1])
  const f = ours.follow(file)
  try {
    await assert.rejects(
      async () => {
        for await (const e of f) assert.fail(`no event: ${e.type}`)
      },
      (err) => {
        assert.match(err.message, /not a valid pi session/)
        return true
      },
    )
    assert.ok(f.closed)
    assert.throws(() => ours.followLatest(dir, { flavor: 'claude' }), TypeError)
  } finally {
    f.close()
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a follower keeps the process alive until closed, then lets it exit', () => {
  const dir = tmp()
  const file = join(dir, 's.jsonl')
  writeFileSync(file, lines.slice(0, 2).join(''))
  try {
    const script = `
      const f = require(process.argv[1]).follow(process.argv[2])
      f.on('entries', (e) => { console.log(e.entries.length); setTimeout(() => f.close(), 300) })`
    const r = spawnSync(process.execPath, ['-e', script, join(repo, 'bindings', 'node', 'index.js'), file], {
      encoding: 'utf8',
      timeout: 20_000,
    })
    assert.equal(r.error, undefined, 'exited once closed')
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stdout, '1\n')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

// The README's example runs as written (from this folder), and says what the file holds.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { ours } from './common.mjs'
import { scratch } from './scratch.mjs'

const here = join(dirname(fileURLToPath(import.meta.url)), '..')

test('the README example runs', () => {
  const readme = readFileSync(join(here, 'README.md'), 'utf8')
  const code = /```js\n([\s\S]*?)```/.exec(readme)[1]
  // (Run from this folder, requiring the package by its own name: its index.)
  const file = join(scratch('pi-session-readme-'), 'example.cjs')
  writeFileSync(file, code.replace("require('@pi-session/node')", `require(${JSON.stringify(join(here, 'index.js'))})`))
  const out = execFileSync(process.execPath, [file], { cwd: here, encoding: 'utf8' })
  const lines = out.trim().split('\n')
  assert.match(lines[0], / \d+ entries, leaf \S+$/)
  assert.match(lines[1], /^\d+ messages in context, model /)
  assert.ok(lines.includes("branch now [ 'dd48b9ed' ]"), out)
  // (The listing resolves last: it runs on another thread.)
  assert.match(lines.at(-1), /^6 sessions, newest 20\d\d-/)
})

test('the README follow example runs', () => {
  const readme = readFileSync(join(here, 'README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('## Following a session'))
  const code = /```js\n([\s\S]*?)```/.exec(section)[1]
  const file = join(scratch('pi-session-readme-'), 'follow.cjs')
  writeFileSync(file, code.replace("require('@pi-session/node')", `require(${JSON.stringify(join(here, 'index.js'))})`))
  // (It ends by itself: the example closes the follower, and nothing else holds the process.)
  const out = execFileSync(process.execPath, [file], { cwd: here, encoding: 'utf8', timeout: 20_000 })
  const sm = ours.SessionManager.open(join(here, '..', '..', 'corpus', 'valid', 'branches.jsonl'))
  const entries = sm.getEntries()
  assert.equal(out, `following ${sm.getSessionId()} (first)\n${entries.length} entries, last ${entries.at(-1).id}\n`)
})

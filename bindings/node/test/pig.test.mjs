// PiG's reading views (its SDK's GetBranch and GetEntries), from Node: the same as the
// command line's `dump --branch-view` and `dump --entries` (goldens of the PiG corpus),
// and up to date after an append.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { copyFileSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { ours, repo } from './common.mjs'
import { scratch } from './scratch.mjs'

const pig = join(repo, 'corpus', 'pig')
const files = readdirSync(pig).filter((f) => f.endsWith('.jsonl'))

test('getBranchView is dump --branch-view, getRawEntries the lines as written', () => {
  assert.ok(files.length >= 9)
  for (const f of files) {
    const sm = ours.SessionManager.open(join(pig, f))
    const golden = readFileSync(join(repo, 'corpus', 'golden', 'pig-views', f.replace(/\.jsonl$/, '.branch-view.jsonl')), 'utf8')
    const want = golden.split('\n').filter(Boolean).map((l) => JSON.parse(l))
    assert.deepEqual(sm.getBranchView(), want, f)
    const lines = readFileSync(join(pig, f)).toString('latin1').split('\n').slice(1).filter(Boolean)
    const raw = sm.getRawEntries()
    assert.ok(raw.every((b) => Buffer.isBuffer(b)), f)
    assert.deepEqual(raw.map((b) => b.toString('latin1')), lines, f)
  }
})

test('both views follow appends', () => {
  const dir = scratch('pig-views-')
  try {
    const file = join(dir, 's.jsonl')
    copyFileSync(join(pig, 'blocks.jsonl'), file)
    const sm = ours.SessionManager.open(file)
    const before = sm.getBranchView().length
    const id = sm.appendMessage({
      role: 'assistant',
      content: [{ type: 'text', text: 'again' }, { type: 'toolCall', id: 'c9', name: 'bash', arguments: { command: 'ls' } }],
      api: 'anthropic-messages',
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
      stopReason: 'toolUse',
      timestamp: 1770112900000,
    })
    const view = sm.getBranchView()
    assert.equal(view.length, before + 1)
    assert.deepEqual(
      { id: view.at(-1).id, text: view.at(-1).text, toolCalls: view.at(-1).toolCalls },
      { id, text: 'again', toolCalls: ['bash'] },
    )
    const last = readFileSync(file, 'utf8').trimEnd().split('\n').at(-1)
    assert.equal(sm.getRawEntries().at(-1).toString('utf8'), last)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

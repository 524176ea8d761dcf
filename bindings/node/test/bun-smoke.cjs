// A smoke test for Bun (`npm run test:bun`): the package loads, opens a corpus session and
// gives what Node gives (the numbers below are pi's for this file), lists a folder, and
// follows the session (its entries come from the follower's own thread).
const assert = require('node:assert/strict')
const { join } = require('node:path')
const { SessionManager, follow } = require('../index.js')

const repo = join(__dirname, '..', '..', '..')
const sm = SessionManager.open(join(repo, 'corpus', 'valid', 'branches.jsonl'))
assert.equal(sm.getEntryCount(), 11)
assert.equal(sm.getLeafId(), '702d6f32')
assert.equal(sm.buildSessionContext().messages.length, 5)
assert.equal(sm.getTree().length, 1)
const followed = new Promise((done) => {
  const f = follow(join(repo, 'corpus', 'valid', 'branches.jsonl'))
  f.on('entries', ({ entries }) => {
    assert.deepEqual(entries, sm.getEntries())
    f.close()
    done()
  })
})
Promise.all([SessionManager.listAll(join(repo, 'corpus', 'listing', 'flat')), followed]).then(([all]) => {
  assert.equal(all.length, 7)
  assert.ok(all[0].modified instanceof Date)
  console.log(`bun smoke test: ok (${typeof Bun === 'undefined' ? 'not bun' : `bun ${Bun.version}`})`)
})

// The package as a user gets it (#36): `npm pack` makes a tarball that installs into an
// empty folder (no registry: the package has no dependencies) with the addon built for
// this platform, and works there: listAll, open, buildSessionContext, as pi's own
// SessionManager answers them (the numbers are pi's for these files).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { scratch } from './scratch.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const pkg = join(here, '..')
const repo = join(pkg, '..', '..')

test('npm pack gives a tarball that installs and works in an empty folder', () => {
  const work = scratch('pi-session-pack-')
  try {
    const out = execFileSync('npm', ['pack', '--json', '--pack-destination', work], { cwd: pkg, encoding: 'utf8' })
    const [{ filename, files }] = JSON.parse(out)
    const names = files.map((f) => f.path)
    assert.ok(names.some((n) => n.endsWith('.node')), `the addon is in the tarball: ${names}`)
    assert.ok(!names.some((n) => n.startsWith('src/') || n.startsWith('test/')), `${names}`)
    const app = join(work, 'app')
    execFileSync('mkdir', ['-p', app])
    writeFileSync(join(app, 'package.json'), '{"name":"app","version":"1.0.0","private":true}\n')
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--offline', join(work, filename)], { cwd: app, stdio: 'pipe' })
    const script = `
      const { SessionManager } = require('@pi-session/node')
      const sm = SessionManager.open(${JSON.stringify(join(repo, 'corpus', 'valid', 'branches.jsonl'))})
      SessionManager.listAll(${JSON.stringify(join(repo, 'corpus', 'listing', 'flat'))}).then((all) => {
        console.log(JSON.stringify({ leaf: sm.getLeafId(), context: sm.buildSessionContext().messages.length, listed: all.length }))
      })
    `
    const got = JSON.parse(execFileSync('node', ['-e', script], { cwd: app, encoding: 'utf8' }))
    assert.deepEqual(got, { leaf: '702d6f32', context: 5, listed: 7 })
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
})

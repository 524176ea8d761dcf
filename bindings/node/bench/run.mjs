// One timed call in a fresh process, for bench/compare.sh: `node bench/run.mjs SIDE WHAT ARG`
// SIDE: pi | ours. WHAT: listall (ARG: an agent dir) | context (ARG: a session file).
// Prints `seconds count`.
import { createRequire } from 'node:module'
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const [side, what, arg] = process.argv.slice(2)
const here = dirname(fileURLToPath(import.meta.url))
const { SessionManager } =
  side === 'pi'
    ? await import(
        pathToFileURL(join(here, '..', 'node_modules', '@earendil-works', 'pi-coding-agent', 'dist', 'core', 'session-manager.js')).href
      )
    : createRequire(import.meta.url)('../index.js')

let file = arg
if (what === 'context' && side === 'pi') {
  // pi's open may rewrite the file: it gets a copy (made before the clock starts).
  file = join(mkdtempSync(join(tmpdir(), 'pi-bench-')), basename(arg))
  copyFileSync(arg, file)
}
const t0 = process.hrtime.bigint()
let count
if (what === 'listall') {
  process.env.PI_CODING_AGENT_DIR = arg
  count = (await SessionManager.listAll()).length
} else {
  const sm = SessionManager.open(file)
  count = sm.buildSessionContext().messages.length
}
console.log(`${Number(process.hrtime.bigint() - t0) / 1e9} ${count}`)
// (pi's copy goes, after the clock stopped: copies left behind fill the disk and push
// the session out of the page cache.)
if (file !== arg) rmSync(dirname(file), { recursive: true, force: true })

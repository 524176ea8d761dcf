// Scratch folders for the suites: each is removed when the test process exits, so a run
// leaves nothing behind in the system's temporary folder. (No tests here.)
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const made = []
process.on('exit', () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true })
})

/** A new empty folder under the system's temporary folder, named `prefix` and six characters. */
export function scratch(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  made.push(dir)
  return dir
}

// What the suites against pi share: pi 1.6.0's session-manager module (a dev-dependency),
// this package, the repository's corpus files, and a call's outcome. (No tests here.)
import { existsSync, readdirSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const require = createRequire(import.meta.url)
const here = dirname(fileURLToPath(import.meta.url))
export const repo = join(here, '..', '..', '..')
// (The package's index does not load on Node 20; its session-manager module does.)
const piModule = join(here, '..', 'node_modules', '@earendil-works', 'pi-coding-agent', 'dist', 'core', 'session-manager.js')
export const pi = await import(pathToFileURL(piModule).href)
export const ours = require('../index.js')

/** Every `.jsonl` file below `dir` (none when it does not exist). */
export function jsonl(dir) {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { recursive: true })
    .filter((f) => f.endsWith('.jsonl'))
    .map((f) => join(dir, f))
    .filter((f) => statSync(f).isFile())
}

/** `fn()`'s value, or the error it threw as `{error: "Name: message"}`. */
export function outcome(fn) {
  try {
    return { value: fn() }
  } catch (e) {
    return { error: `${e?.constructor?.name}: ${e?.message}` }
  }
}

'use strict'
// pi's SessionManager (read side) over pi-session's native reader. Each method answers
// as pi 1.6.0's does, with pi's names; an entry becomes a JavaScript object (made by the
// native side from its decoded value) only when a method hands it out, and is kept, so
// one entry is one object for the session's life.

const { homedir } = require('node:os')
const { isAbsolute, join, resolve } = require('node:path')
const { fileURLToPath } = require('node:url')
const native = require('./native.js')

/**
 * The native side reports pi's errors as `Name: message` (`Error: Entry x not found`,
 * `TypeError: ...`): thrown again as that class with that message, as pi throws them.
 */
function piError(e) {
  const m = /^(Error|TypeError|RangeError|SyntaxError): ([\s\S]*)$/.exec(e && e.message)
  if (!m) return e
  return new globalThis[m[1]](m[2])
}

/** Every method of the native session, its errors made pi's. */
function wrap(n) {
  return new Proxy(n, {
    get(target, key) {
      const v = target[key]
      if (typeof v !== 'function') return v
      return (...args) => {
        try {
          return v.apply(target, args)
        } catch (e) {
          throw piError(e)
        }
      }
    },
  })
}

function openNative(file) {
  try {
    return wrap(native.NativeSession.open(file))
  } catch (e) {
    // (The library names the file `<session-file>` in pi's messages, as the oracle does.)
    if (e && typeof e.message === 'string') e.message = e.message.replaceAll('<session-file>', file)
    throw piError(e)
  }
}

/** pi's `normalizePath` (utils/paths.js) on POSIX: `~`, `~/...` and `file://` URLs. */
function normalizePath(input) {
  if (input === '~') return homedir()
  if (input.startsWith('~/')) return join(homedir(), input.slice(2))
  if (/^file:\/\//.test(input)) return fileURLToPath(input)
  return input
}

/** pi's `resolvePath`: normalized, then absolute against `baseDir`. */
function resolvePath(input, baseDir = process.cwd()) {
  const n = normalizePath(input)
  return isAbsolute(n) ? resolve(n) : resolve(normalizePath(baseDir), n)
}

/** The members of the messages pi makes (by shape: see `ContextText` in src/lib.rs). */
const MADE_KEYS = [
  null,
  ['customType', 'content', 'display', 'details', 'timestamp'],
  ['summary', 'fromId', 'timestamp'],
  ['summary', 'tokensBefore', 'timestamp'],
]
/** The roles whose content a context edit replaces. */
const EDITABLE = new Set(['user', 'assistant', 'toolResult', 'custom'])

/** pi's `SessionInfo` from the native side's `Info` (see src/lib.rs). */
function toInfo(s) {
  const t = s.exact ? { ...s, ...s.exact } : s
  return {
    path: s.path,
    id: s.id,
    cwd: t.cwd,
    name: t.name ?? undefined,
    parentSessionPath: s.parentSessionPath,
    created: new Date(s.created),
    modified: new Date(s.modified),
    messageCount: s.messageCount,
    firstMessage: t.firstMessage,
    allMessagesText: t.allMessagesText,
  }
}

/**
 * Run a listing off the JavaScript thread: `start(job, progress)` starts it. Progress
 * comes as pi gives it, `(loaded, total, partialSessions?)`, every call before the
 * promise resolves; an aborted `signal` stops the listing between files and rejects
 * with the signal's reason, as pi does.
 */
async function runList(start, onProgress, signal) {
  signal?.throwIfAborted()
  const job = new native.ListJob()
  const known = []
  let received = 0
  let wanted = Infinity
  let allReceived
  const done = new Promise((resolve) => {
    allReceived = resolve
  })
  const progress = onProgress
    ? (loaded, total, fresh, order) => {
        if (fresh) for (const s of fresh) known.push(toInfo(s))
        received++
        try {
          onProgress(loaded, total, order ? order.map((i) => known[i]) : undefined)
        } finally {
          if (received >= wanted) allReceived()
        }
      }
    : undefined
  const onAbort = () => job.cancel()
  signal?.addEventListener('abort', onAbort, { once: true })
  try {
    const { sessions, calls } = await start(job, progress)
    if (progress && received < calls) {
      wanted = calls
      await done
    }
    signal?.throwIfAborted()
    if (sessions == null) throw new Error('listing cancelled')
    return sessions.map(toInfo)
  } finally {
    signal?.removeEventListener('abort', onAbort)
  }
}

class SessionManager {
  #native
  #entries
  #header
  #file
  #dir
  #cwd

  constructor(native, file, dir, cwd, header) {
    this.#native = native
    this.#entries = new Array(native.entryLen())
    this.#file = file
    this.#dir = dir
    this.#cwd = cwd
    this.#header = header
  }

  /**
   * Open a session file, as pi's `SessionManager.open` (read-only: an old-format file is
   * migrated in memory, never rewritten).
   */
  static open(path, sessionDir, cwdOverride) {
    const file = resolvePath(path)
    const native = openNative(file)
    const header = native.header()
    const headerCwd = header && typeof header.cwd === 'string' ? header.cwd : undefined
    const cwd = resolvePath(cwdOverride ?? headerCwd ?? process.cwd())
    const dir = sessionDir ? normalizePath(sessionDir) : resolve(file, '..')
    return new SessionManager(native, file, dir, cwd, header)
  }

  /** pi's `SessionManager.list(cwd, sessionDir?, onProgress?, signal?)`: one project's sessions. */
  static async list(cwd, sessionDir, onProgress, signal) {
    const dir = sessionDir ? normalizePath(sessionDir) : undefined
    return runList((job, progress) => job.list(cwd, dir, progress), onProgress, signal)
  }

  /**
   * pi's `SessionManager.listAll(sessionDirOrOnProgress?, onProgressOrSignal?, signal?)`:
   * every session under pi's sessions root (`PI_CODING_AGENT_DIR`, else
   * `~/.pi/agent`, then `sessions`), or in one flat folder when given one.
   */
  static async listAll(sessionDirOrOnProgress, onProgressOrSignal, signal) {
    const a = sessionDirOrOnProgress
    const b = onProgressOrSignal
    const customSessionDir = typeof a === 'string' ? normalizePath(a) : undefined
    const progress = typeof a === 'function' ? a : typeof b === 'function' ? b : undefined
    const abortSignal = typeof a === 'string' || typeof b === 'function' ? signal : (b ?? signal)
    return runList(
      (job, p) => (customSessionDir ? job.listAll(customSessionDir, true, p) : job.listAll('', false, p)),
      progress,
      abortSignal,
    )
  }

  #entry(k) {
    let e = this.#entries[k]
    if (e === undefined) {
      e = this.#native.entry(k)
      this.#entries[k] = e
    }
    return e
  }

  #list(numbers) {
    return numbers.map((k) => this.#entry(k))
  }

  /** pi's `byId` map, built from every entry: for keys the native side does not take. */
  #byId() {
    const m = new Map()
    for (const e of this.getEntries()) m.set(e.id, e)
    return m
  }

  isPersisted() {
    return true
  }
  getCwd() {
    return this.#cwd
  }
  getSessionDir() {
    return this.#dir
  }
  getSessionId() {
    return this.#header ? this.#header.id : undefined
  }
  getSessionFile() {
    return this.#file
  }
  getHeader() {
    return this.#header
  }
  getEntryCount() {
    return this.#native.entryCount()
  }
  getEntries() {
    const out = new Array(this.#entries.length)
    for (let k = 0; k < out.length; k++) out[k] = this.#entry(k)
    return out
  }
  getEntry(id) {
    if (typeof id !== 'string') return this.#byId().get(id)
    const k = this.#native.entryNumber(id)
    return k == null ? undefined : this.#entry(k)
  }
  getLeafId() {
    return this.#native.leafIdIsUndefined() ? undefined : this.#native.leafId()
  }
  getLeafEntry() {
    const k = this.#native.leafNumber()
    return k == null ? undefined : this.#entry(k)
  }
  getChildren(parentId) {
    if (parentId === null || typeof parentId === 'string') {
      return this.#list(this.#native.childrenNumbers(parentId))
    }
    return [...this.#byId().values()].filter((e) => e.parentId === parentId)
  }
  getLabel(id) {
    if (typeof id !== 'string') return undefined
    return this.#native.label(id) ?? undefined
  }
  getBranch(fromId) {
    return this.#list(this.#native.branchNumbers(fromId ?? undefined))
  }
  buildContextEntries() {
    return this.#list(this.#native.contextEntryNumbers())
  }
  buildSessionContext() {
    const { context, shapes } = this.#native.context()
    const { messages, thinkingLevel, model } = context
    // pi's own message objects have every member even when it is `undefined`, and NaN
    // for a time that does not parse; JSON has neither.
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i]
      const made = shapes[i] & 7
      const keys = MADE_KEYS[made]
      if (keys) {
        for (const k of keys) if (!(k in m)) m[k] = undefined
        if (m.timestamp === null) m.timestamp = NaN
      }
      if (shapes[i] & 8 && EDITABLE.has(m.role) && !('content' in m)) m.content = undefined
    }
    if (model !== null && typeof model === 'object') {
      for (const k of ['provider', 'modelId']) if (!(k in model)) model[k] = undefined
    }
    return { messages, thinkingLevel, model }
  }
  getTree() {
    const flat = this.#native.tree()
    const nodes = new Array(flat.length)
    const roots = []
    for (let i = 0; i < flat.length; i++) {
      const [k, parent, label, labelTimestamp] = flat[i]
      const node = { entry: this.#entry(k), children: [], label, labelTimestamp }
      nodes[i] = node
      if (parent < 0) roots.push(node)
      else nodes[parent].children.push(node)
    }
    return roots
  }
  getSessionName() {
    return this.#native.sessionName() ?? undefined
  }
  branch(branchFromId) {
    this.#native.branch(branchFromId)
  }
  resetLeaf() {
    this.#native.resetLeaf()
  }
}

module.exports = { SessionManager, CURRENT_SESSION_VERSION: 3 }

'use strict'
// pi's SessionManager and its module's functions over pi-session's native reader and
// writer. Each answers as pi 1.6.0's does, with pi's names.
//
// Reading: an entry of a file becomes a JavaScript object (made by the native side from
// its decoded value) only when a method hands it out, and is kept, so one entry is one
// object for the session's life.
// Writing: the native side builds each new entry as pi builds it, from the caller's
// arguments as `JSON.stringify` writes them, writes it and indexes it, and says which of
// its members are the caller's arguments: the entry kept here holds the caller's objects
// there (the message appended stays the entry's `message`, as in pi). No rule of pi's is
// written here: entries, headers, branching, migration and paths are the library's.

const { EventEmitter } = require('node:events')
const { existsSync, mkdirSync, statSync } = require('node:fs')
const { constants: osConstants } = require('node:os')
const { resolve } = require('node:path')
const native = require('./native.js')

const CURRENT_SESSION_VERSION = 3
const APP_NAME = 'pi'

/**
 * The native side reports pi's errors as `Name: message` (`Error: Entry x not found`,
 * `TypeError: ...`): thrown again as that class with that message, as pi throws them.
 */
function piError(e) {
  const io = /^(E[A-Z]+): .*, (\w+) '([\s\S]*)'$/.exec(e && e.message)
  if (io) {
    // A failed file operation, as Node's fs reports it.
    const err = new Error(e.message)
    err.errno = -(osConstants.errno[io[1]] ?? 0)
    err.code = io[1]
    err.syscall = io[2]
    err.path = io[3]
    return err
  }
  const m = /^(Error|TypeError|RangeError|SyntaxError|URIError): ([\s\S]*)$/.exec(e && e.message)
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

/** The native side's error for a file that is no session, as pi words it (then its path). */
const NOT_A_SESSION = 'Error: Session file is not a valid pi session: '

/** A file opened read-only, or `null` when it is no session (no header). */
function openNative(file, sessionDir, cwd) {
  try {
    return wrap(native.NativeSession.open(file, sessionDir, cwd))
  } catch (e) {
    if (typeof e?.message === 'string' && e.message.startsWith(NOT_A_SESSION)) return null
    throw piError(e)
  }
}

/** Call a native factory, its errors made pi's. */
function made(f) {
  try {
    return wrap(f())
  } catch (e) {
    throw piError(e)
  }
}

/** A native call, its errors made pi's (node's, for a `file://` URL node refuses). */
function call(f) {
  try {
    return f()
  } catch (e) {
    const node = /^(TypeError) \[(\w+)\]: ([\s\S]*)$/.exec(e?.message)
    if (node) {
      const err = new globalThis[node[1]](node[3])
      err.code = node[2]
      throw err
    }
    throw piError(e)
  }
}

/** pi's `normalizePath` (utils/paths.js): `~`, `~/...` and `file://` URLs. */
function normalizePath(input) {
  return call(() => native.normalizePath(input))
}

/** pi's `resolvePath`: normalized, then absolute against `baseDir`. */
function resolvePath(input, baseDir) {
  return call(() => native.resolvePath(input, baseDir ?? null))
}

/** pi's `pathsEqual`: the same absolute path. */
function pathsEqual(a, b) {
  return native.pathsEqual(a, b)
}

/** pi's project folder of sessions for `cwd` (`getDefaultSessionDirPath`). */
function getDefaultSessionDirPath(cwd, agentDir) {
  return call(() => native.defaultSessionDirPath(cwd, agentDir ?? null))
}

/** pi's `getDefaultSessionDir(cwd, agentDir?)`: that folder, created when missing. */
function getDefaultSessionDir(cwd, agentDir) {
  const dir = getDefaultSessionDirPath(cwd, agentDir)
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true })
  return dir
}

/** pi's `assertValidSessionId`, with pi's message. */
function assertValidSessionId(id) {
  try {
    native.assertValidSessionId(String(id))
  } catch (e) {
    throw piError(e)
  }
}

/**
 * pi's `SessionInfo` from the native side's `Info` (see src/lib.rs). A text the listing
 * left in the listing cache (`textSlot`) is read from it when `allMessagesText` is first
 * read (an own, enumerable property all along, then a plain value), so a listing of
 * thousands of sessions does not make every text a JavaScript string up front.
 */
function toInfo(s, job) {
  const t = s.exact ? { ...s, ...s.exact } : s
  const info = {
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
  if (s.textSlot != null) {
    const settle = (value) => {
      Object.defineProperty(info, 'allMessagesText', { value, writable: true, enumerable: true, configurable: true })
      return value
    }
    Object.defineProperty(info, 'allMessagesText', {
      get: () => settle(job.text(s.textSlot)),
      set: settle,
      enumerable: true,
      configurable: true,
    })
  }
  return info
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
        if (fresh) for (const s of fresh) known.push(toInfo(s, job))
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
    return sessions.map((s) => toInfo(s, job))
  } finally {
    signal?.removeEventListener('abort', onAbort)
  }
}

/**
 * One message of the context, made from entry objects as pi's `projectContextEntry`
 * makes it: `projection` says which part of entry `e` (see `ContextValue` in
 * src/lib.rs), `edit` is the `context_edit` entry replacing its content, if any.
 */
function messageOf(projection, e, edit) {
  let m
  switch (projection) {
    case 0:
      m = e.message
      // A stored message without content gets empty content, on a copy.
      if (m.role === 'system' && lacks(m, 'content')) m = { ...m, content: '' }
      else if ((m.role === 'user' || m.role === 'assistant' || m.role === 'toolResult') && lacks(m, 'content')) {
        m = { ...m, content: [] }
      }
      break
    case 1:
      m = {
        role: 'custom',
        customType: e.customType,
        content: e.content ?? [],
        display: e.display,
        details: e.details,
        timestamp: new Date(e.timestamp).getTime(),
      }
      break
    case 2:
      m = { role: 'branchSummary', summary: e.summary, fromId: e.fromId, timestamp: new Date(e.timestamp).getTime() }
      break
    case 3:
      m = e.systemMessage
      break
    default:
      m = {
        role: 'compactionSummary',
        summary: e.summary,
        tokensBefore: e.tokensBefore,
        timestamp: new Date(e.timestamp).getTime(),
      }
  }
  if (edit === undefined) return m
  const role = m.role
  if (role !== 'user' && role !== 'assistant' && role !== 'toolResult' && role !== 'custom') return m
  const r = edit.replacement
  const content =
    (role === 'assistant' || role === 'toolResult') && typeof r.content === 'string' ? [{ type: 'text', text: r.content }] : r.content
  return { ...m, content }
}

/**
 * `object[key] == null`, without reading a string left in the file (`deferString`), which
 * is not `null`: the context hands the message on, and its string stays there until read.
 */
function lacks(object, key) {
  const get = Object.getOwnPropertyDescriptor(object, key)?.get
  if (get && LEFT_IN_FILE.has(get)) return false
  return object[key] == null
}

/** `buildSessionContext()` from the native side's plan (`ContextValue` in src/lib.rs). */
function contextOf({ settings, projections, entries, edits }, entryAt) {
  const messages = new Array(projections.length)
  for (let i = 0; i < messages.length; i++) {
    messages[i] = messageOf(projections[i], entryAt(entries[i]), edits[i] < 0 ? undefined : entryAt(edits[i]))
  }
  const { thinkingLevel } = settings
  // pi's model object has both members, in this order, even when an entry lacks one.
  const model = settings.model === null ? null : { provider: settings.model.provider, modelId: settings.model.modelId }
  return { messages, thinkingLevel, model }
}

/**
 * Member `key` of `object`, a string of `length` bytes of JSON at `offset` in the session
 * file, as a property that reads it from there when first read, then holds it as a plain
 * value (as does one assigned before). Its value is the one `JSON.parse` gives; only
 * `Object.getOwnPropertyDescriptor` (and `util.inspect`, which shows `[Getter/Setter]`)
 * tell it apart before it is read.
 */
function deferString(object, key, texts, offset, length) {
  const get = () => settle(object, key, texts.at(offset, length))
  LEFT_IN_FILE.add(get)
  HOLDS_LEFT_IN_FILE.add(object)
  Object.defineProperty(object, key, {
    enumerable: true,
    configurable: true,
    get,
    set(value) {
      settle(object, key, value)
    },
  })
}

/** The getters `deferString` defined, and the objects it defined them on. */
const LEFT_IN_FILE = new WeakSet()
const HOLDS_LEFT_IN_FILE = new WeakSet()

/**
 * The members a session's answers are computed from (ids and links, types and roles, labels,
 * names, times, the model and thinking level): read even when their string was left in the
 * file. Any other string left there (a text, an image) counts only as a string that is not
 * empty, which is all those answers ask of it.
 */
const READ_FOR_ANSWERS = new Set([
  'type',
  'id',
  'parentId',
  'targetId',
  'firstKeptEntryId',
  'fromId',
  'role',
  'timestamp',
  'label',
  'name',
  'thinkingLevel',
  'provider',
  'modelId',
  'model',
])

/** What stands for a string left in the file in `heldLine`. */
const UNREAD = '[a string left in the session file]'

/**
 * How deep `heldLine` copies an entry: its members (depth 1: `message`, `replacement`,
 * ...), theirs (depth 2: `role`, `content`, ...), and the kind of value below (an
 * object or an array, empty). The answers read nothing deeper.
 */
const HELD_DEPTH = 3

/**
 * An entry object held, as a JSON line for the answers the session gives (see
 * `#reader()`): as `JSON.stringify` writes it, down to `HELD_DEPTH`; a string still left
 * in the file (`deferString`) that no answer reads (see `READ_FOR_ANSWERS`) is not read
 * (the file may no longer hold it) and stands as `UNREAD`.
 */
function heldLine(entry) {
  // (A line of its own that is a number too large for a double, which JSON has no text
  // for: `null` would be a line the reader skips.)
  if (entry === Infinity || entry === -Infinity) return entry > 0 ? '1e400' : '-1e400'
  const depth = new WeakMap()
  return JSON.stringify(entry, function (_, value) {
    if (value === null || typeof value !== 'object') return value
    const d = (depth.get(this) ?? -1) + 1
    if (d >= HELD_DEPTH) return Array.isArray(value) ? [] : {}
    let held = value
    if (HOLDS_LEFT_IN_FILE.has(value)) {
      held = {}
      for (const k of Object.keys(value)) {
        const get = Object.getOwnPropertyDescriptor(value, k)?.get
        const v = get && LEFT_IN_FILE.has(get) && !READ_FOR_ANSWERS.has(k) ? UNREAD : value[k]
        Object.defineProperty(held, k, { value: v, writable: true, enumerable: true, configurable: true })
      }
    }
    depth.set(held, d)
    return held
  })
}

/** Make `object[key]` the plain data property `value` (which it returns). */
function settle(object, key, value) {
  try {
    Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true })
  } catch {
    // Frozen or sealed since: the accessor stays, and each read reads the file again.
  }
  return value
}

/** A header for sessions made only to run the module's functions over entry arrays. */
const SCRATCH_HEADER = '{"type":"session","version":3,"id":"scratch","timestamp":"1970-01-01T00:00:00.000Z","cwd":""}'

/**
 * A native session holding `entries` (the caller's objects, as JSON), its leaf `leafId`,
 * and for each of its entry numbers the caller's index. (A value the native reader keeps
 * as no entry, such as `null`, a header or one `JSON.stringify` cannot write, has no
 * number.)
 */
function scratch(entries, leafId) {
  const lines = [SCRATCH_HEADER]
  const index = []
  for (let i = 0; i < entries.length; i++) {
    const text = JSON.stringify(entries[i])
    if (text === undefined) continue
    lines.push(text)
    index.push(i)
  }
  const n = made(() => native.NativeSession.ofLines(`${lines.join('\n')}\n`, JSON.stringify(leafId)))
  // Entry k is on line `line` of the text (1: the header), the caller's `index[line - 2]`.
  const lineOf = n.entryLines()
  return { n, at: (k) => entries[index[lineOf[k] - 2]] }
}

/**
 * Whether `path` (links followed) is a regular file of size 0: the one file pi's open
 * writes a header to. A device, a FIFO or a socket has size 0 too, but is no empty
 * session: the native open refuses it (pi's class would read `/dev/zero` until memory
 * runs out, and block on a FIFO).
 */
function isEmptyRegularFile(path) {
  const st = statSync(path)
  return st.isFile() && st.size === 0
}

/**
 * pi's version 1 to 3 migrations of entries held in memory, in place; true if any ran.
 * The native side says what changes (`migrate_entries` of the library); they are made here
 * to the caller's own objects.
 */
function migrateToCurrentVersion(entries) {
  const { edits, ran, thrown } = native.migrationEdits(JSON.stringify(entries))
  for (const { at, path, value, remove } of edits) {
    let object = entries[at]
    for (const key of path.slice(0, -1)) object = object[key]
    const key = path[path.length - 1]
    if (remove) delete object[key]
    else object[key] = value
  }
  if (thrown != null) throw piError(new Error(thrown))
  return ran
}

/**
 * The object pi's method made, from what the native side made of `args` (see
 * `appendCall` in src/lib.rs): the members in pi's order, the caller's own values where
 * they are its arguments, the values the method made elsewhere.
 */
function assemble(made, args) {
  const object = {}
  for (let i = 0; i < made.keys.length; i++) {
    object[made.keys[i]] = made.args[i] === null ? made.values[i] : args[made.args[i]]
  }
  return object
}

/** A way into a new `SessionManager` for a native session made before it. */
const PREOPENED = Symbol('preopened')

class SessionManager {
  #native
  #entries = []
  #header = null
  #sessionId = ''
  #file
  #dir
  #cwd
  #persist
  /**
   * After another process cut the file short under its mapping, the entries held, as a
   * session of their own (`n`), for the array `#entries` of that length: see `#reader()`.
   */
  #frozen = null

  /**
   * pi's constructor: `sessionFile` opened (a new session at that path if there is no
   * file, a header written to an empty one), else `preloadedFileEntries` taken in (an
   * in-memory session of them), else a new session.
   */
  constructor(cwd, sessionDir, sessionFile, persist, newSessionOptions, preloadedFileEntries, preopened) {
    this.#cwd = resolvePath(cwd)
    this.#dir = normalizePath(sessionDir)
    this.#persist = persist
    if (persist && this.#dir && !existsSync(this.#dir)) mkdirSync(this.#dir, { recursive: true })
    if (preopened && preopened.key === PREOPENED) {
      this.#file = preopened.native.file() ?? undefined
      this.#use(preopened.native)
    } else if (sessionFile) {
      this.#setSessionFile(sessionFile, preopened)
    } else if (preloadedFileEntries?.length) {
      this.#loadEntries(preloadedFileEntries, newSessionOptions)
    } else {
      this.newSession(newSessionOptions)
    }
  }

  /** Stand on a native session opened from a file. */
  #use(n) {
    n.setCwd(this.#cwd)
    this.#native = n
    this.#entries = new Array(n.entryLen())
    this.#header = n.header()
    this.#sessionId = this.#header ? this.#header.id : undefined
  }

  /** pi's `setSessionFile(path)`: switch to another file (resume, branching). */
  setSessionFile(sessionFile) {
    this.#setSessionFile(sessionFile)
  }

  #setSessionFile(sessionFile, opened) {
    const file = resolvePath(sessionFile)
    this.#file = file
    if (existsSync(file)) {
      // (A zero-byte file opens natively as a session with a header made up in memory;
      // pi writes a header to it at once. Only a regular file is empty: a device or a
      // FIFO, whose size is 0 too, goes to the native open, which refuses it.)
      const empty = isEmptyRegularFile(file)
      const n = empty ? null : opened !== undefined ? opened : openNative(file, this.#dir, this.#cwd)
      if (n === null) {
        // No header: an empty file gets one (pi's open writes it, when it persists),
        // anything else is refused.
        if (!isEmptyRegularFile(file)) throw new Error(`Session file is not a valid ${APP_NAME} session: ${file}`)
        this.#native = null
        this.#newSession(undefined, file)
        if (this.#persist) this.#native.writeNow()
        return
      }
      this.#use(n)
      // A session that does not persist holds the file in memory and never writes it.
      if (!this.#persist) n.keepInMemory()
    } else {
      this.#native = null
      this.#newSession(undefined, file)
    }
  }

  /** pi's `_loadEntries` for entries given in memory (`inMemory(cwd, options, entries)`). */
  #loadEntries(entries, options) {
    const header = entries.find((e) => e.type === 'session')
    if (header) {
      migrateToCurrentVersion(entries)
      if (entries[0] !== header) throw new Error('pi-session: a session header must come first in the entries given')
      this.#native = made(() => native.NativeSession.fresh(this.#cwd, this.#dir ?? '', this.#persist))
      this.#native.startSession(JSON.stringify(header), null)
      this.#header = header
      this.#sessionId = header.id
      this.#entries = []
      for (let i = 1; i < entries.length; i++) this.#appendEntry(entries[i])
    } else {
      this.newSession(options)
      for (const e of entries) this.#appendEntry(e)
    }
  }

  /** pi's `newSession({ id, parentSession })`: a fresh session; returns its file. */
  newSession(options) {
    return this.#newSession(options)
  }

  #newSession(options, explicitFile) {
    if (!this.#native) {
      this.#native = made(() => native.NativeSession.fresh(this.#cwd, this.#dir ?? '', this.#persist))
    }
    const args = { id: options?.id, parentSession: options?.parentSession }
    const header = assemble(this.#native.newSession(JSON.stringify(args), explicitFile ?? null), args)
    if (this.#persist) this.#file = this.#native.file() ?? undefined
    this.#sessionId = header.id
    this.#header = header
    this.#entries = []
    return this.#file
  }

  /**
   * pi's `_appendEntry`: the entry goes to the native side as `JSON.stringify` gives it
   * (to memory before the file exists, else to the file) and is kept as it is. A failed
   * write leaves the session as it was, as pi's does.
   */
  #appendEntry(entry) {
    const anew = this.#native.append(JSON.stringify(entry))
    const n = this.#native.entryLen()
    if (anew) this.#entries = new Array(n)
    else this.#entries.length = n
    // Found by its id (fresh, so the only one), not assumed last: another process may
    // have appended after it, and a header among given entries is no entry.
    const k = typeof entry.id === 'string' ? this.#native.entryNumber(entry.id) : null
    if (k == null) return
    this.#entries[k] = entry
    // pi's leaf is the entry just appended.
    if (this.#native.leafNumber() !== k) this.#native.branch(entry.id)
  }

  #has(id) {
    if (typeof id === 'string') return this.#keys().entryNumber(id) != null
    return this.#byId().has(id)
  }

  /**
   * The native session that answers what is read from the file (ids and links, labels,
   * names, the context, the tree). pi holds every entry in memory and answers from there
   * whatever becomes of the file; here a session file of 1 MiB or more is mapped, and
   * entries are read from it when asked for. If another process cuts the file short under
   * the mapping, its bytes are gone: then, if every entry has been made (handed out) and
   * is held, they answer, as a session of their own, until `refresh()` or an append takes
   * in the file as it is now. Otherwise the error says that the file changed. (A file read
   * whole, one under 1 MiB, is held in memory and answers as before.)
   */
  #reader() {
    const frozen = this.#frozenNow()
    if (frozen) return frozen
    try {
      this.#native.checkFile()
      return this.#native
    } catch (e) {
      if (!/the file changed while it was open/.test(e?.message)) throw e
      return this.#freeze(e)
    }
  }

  /** The session of the entries held, if the answers come from there now. */
  #frozenNow() {
    const f = this.#frozen
    return f && f.entries === this.#entries && f.len === this.#entries.length ? f.n : null
  }

  /** The native session that knows the ids for an append: that of `#reader()` if it has one. */
  #keys() {
    return this.#frozenNow() ?? this.#native
  }

  /** The entries held as a session of their own, its leaf the leaf now; `changed` if not all are held. */
  #freeze(changed) {
    const entries = this.#entries
    const lines = [SCRATCH_HEADER]
    // (An array on a line of its own of a version-1 file has an id here that its JSON
    // cannot hold: the entries after it would lose their parent.)
    const v1 = this.#native.migratedFromV1()
    try {
      for (let k = 0; k < entries.length; k++) {
        if (entries[k] === undefined || (v1 && Array.isArray(entries[k]))) throw changed
        lines.push(heldLine(entries[k]))
      }
    } catch {
      // (An entry not made, or one whose id, type, ... was left in the file.)
      throw changed
    }
    const n = made(() => native.NativeSession.ofLines(`${lines.join('\n')}\n`, undefined))
    if (n.entryLen() !== entries.length) throw changed
    const unique = this.#native.leafNumberIfUnique()
    if (unique != null) n.setLeafToIdOf(unique)
    else n.setLeaf(this.#native.leafIdIsUndefined() ? undefined : JSON.stringify(this.#native.leafId()))
    this.#frozen = { n, entries, len: entries.length }
    return n
  }

  /** Move the leaf to `id` (`null`: before the first entry) on `n`, and on the file's session. */
  #moveLeaf(id, n) {
    if (id === null) n.resetLeaf()
    else n.branch(id)
    if (n !== this.#native) {
      if (id === null) this.#native.resetLeaf()
      else this.#native.setLeaf(JSON.stringify(id))
    }
  }

  /** Create a new session (written once it holds a user or assistant message). */
  static create(cwd, sessionDir, options) {
    const dir = sessionDir ? normalizePath(sessionDir) : getDefaultSessionDir(cwd)
    return new SessionManager(cwd, dir, undefined, true, options)
  }

  /**
   * Open a session file, as pi's `SessionManager.open`, but read-only until the first
   * write: an old-format file is migrated in memory, and rewritten only when something
   * is appended (pi rewrites it at once).
   */
  static open(path, sessionDir, cwdOverride) {
    const file = resolvePath(path)
    const dir = sessionDir ? normalizePath(sessionDir) : resolve(file, '..')
    const n =
      existsSync(file) && !isEmptyRegularFile(file)
        ? openNative(file, dir, cwdOverride === undefined ? null : resolvePath(cwdOverride))
        : undefined
    const header = n ? n.header() : null
    const headerCwd = header && typeof header.cwd === 'string' ? header.cwd : undefined
    const cwd = cwdOverride ?? headerCwd ?? process.cwd()
    return new SessionManager(cwd, dir, file, true, undefined, undefined, n)
  }

  /** Continue the most recent session of a folder, or start a new one. */
  static continueRecent(cwd, sessionDir) {
    const dir = sessionDir ? normalizePath(sessionDir) : getDefaultSessionDir(cwd)
    const filterCwd = sessionDir !== undefined && !pathsEqual(dir, getDefaultSessionDirPath(cwd))
    const mostRecent = findMostRecentSession(dir, filterCwd ? cwd : undefined)
    return new SessionManager(cwd, dir, mostRecent ?? undefined, true)
  }

  /** A session that is never written, optionally of entries held outside any file. */
  static inMemory(cwd = process.cwd(), options, entries) {
    return new SessionManager(cwd, '', undefined, false, options, entries)
  }

  /** Fork a session from another project folder: a new file with every entry of the source. */
  static forkFrom(sourcePath, targetCwd, sessionDir, options) {
    const source = resolvePath(sourcePath)
    const target = resolvePath(targetCwd)
    const entries = loadEntriesFromFile(source)
    if (entries.length === 0) throw new Error(`Cannot fork: source session file is empty or invalid: ${source}`)
    const dir = sessionDir ? normalizePath(sessionDir) : getDefaultSessionDir(target)
    if (options?.id !== undefined) assertValidSessionId(options.id)
    const n = made(() => native.NativeSession.forkFrom(source, target, dir, options?.id ?? null))
    return new SessionManager(target, dir, undefined, true, undefined, undefined, { key: PREOPENED, native: n })
  }

  /** The file of the session with this exact id in a project's folder, or `undefined`. */
  static findById(cwd, id, sessionDir) {
    const dir = sessionDir ? normalizePath(sessionDir) : getDefaultSessionDir(cwd)
    const filterCwd = sessionDir !== undefined && !pathsEqual(dir, getDefaultSessionDirPath(cwd))
    if (typeof id !== 'string') return undefined
    return native.findSessionById(dir, id, filterCwd ? resolvePath(cwd) : null) ?? undefined
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
      e = this.#native.entriesMade([k], this.#definer())[0]
      this.#entries[k] = e
    }
    return e
  }

  /** What defines the members of long strings left in the file (`deferString`), if they can be. */
  #definer() {
    const found = this.#native.texts()
    if (found === null) return undefined
    // (Its errors as pi-shaped as the session's: `Error: the session file changed ...`.)
    const texts = wrap(found)
    return (object, key, offset, length) => deferString(object, key, texts, offset, length)
  }

  /**
   * Make the entries `numbers` not made yet, all at once: the native side makes them in
   * order while it decodes the next ones on another thread.
   */
  #prefetch(numbers) {
    const want = []
    for (const k of numbers) if (k >= 0 && this.#entries[k] === undefined) want.push(k)
    if (want.length < 2) return
    const made = this.#native.entriesMade(want, this.#definer())
    for (let i = 0; i < want.length; i++) this.#entries[want[i]] ??= made[i]
  }

  #list(numbers) {
    this.#prefetch(numbers)
    return numbers.map((k) => this.#entry(k))
  }

  /** pi's `byId` map, built from every entry: for keys the native side does not take. */
  #byId() {
    const m = new Map()
    for (const e of this.getEntries()) m.set(e.id, e)
    return m
  }

  isPersisted() {
    return this.#persist
  }
  getCwd() {
    return this.#cwd
  }
  getSessionDir() {
    return this.#dir
  }
  usesDefaultSessionDir() {
    return pathsEqual(this.#dir, getDefaultSessionDirPath(this.#cwd))
  }
  getSessionId() {
    return this.#sessionId
  }
  getSessionFile() {
    return this.#file
  }
  getHeader() {
    return this.#header
  }
  getEntryCount() {
    return this.#keys().entryCount()
  }
  getEntries() {
    return this.#list(Array.from(this.#entries, (_, k) => k))
  }
  getEntry(id) {
    if (typeof id !== 'string') return this.#byId().get(id)
    const k = this.#reader().entryNumber(id)
    return k == null ? undefined : this.#entry(k)
  }
  getLeafId() {
    // (Held in memory; only an id that is an object or an array is read from the file.)
    let n = this.#keys()
    if (n.leafIdIsUndefined()) return undefined
    try {
      return n.leafId()
    } catch (e) {
      if (n !== this.#native || !/the file changed while it was open/.test(e?.message)) throw e
      n = this.#reader()
      return n.leafIdIsUndefined() ? undefined : n.leafId()
    }
  }
  getLeafEntry() {
    const k = this.#reader().leafNumber()
    return k == null ? undefined : this.#entry(k)
  }
  getChildren(parentId) {
    if (parentId === null || typeof parentId === 'string') {
      return this.#list(this.#reader().childrenNumbers(parentId))
    }
    return [...this.#byId().values()].filter((e) => e.parentId === parentId)
  }
  getLabel(id) {
    if (typeof id !== 'string') return undefined
    return this.#reader().label(id) ?? undefined
  }
  getBranch(fromId) {
    if (fromId != null && typeof fromId !== 'string') {
      // An id that is no string: pi's walk over its map.
      const byId = this.#byId()
      const path = []
      for (let e = byId.get(fromId); e; e = e.parentId ? byId.get(e.parentId) : undefined) path.push(e)
      return path.reverse()
    }
    return this.#list(this.#reader().branchNumbers(fromId ?? undefined))
  }
  buildContextEntries() {
    return this.#list(this.#reader().contextEntryNumbers())
  }
  buildSessionContext() {
    const plan = this.#reader().context()
    this.#prefetch(plan.edits.length ? [...plan.entries, ...plan.edits] : plan.entries)
    return contextOf(plan, (k) => this.#entry(k))
  }
  getTree() {
    const flat = this.#reader().tree()
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
    return this.#reader().sessionName() ?? undefined
  }
  /** PiG's `GetBranch()`: the current branch, root first, each entry flattened. */
  getBranchView() {
    return this.#reader()
      .branchView()
      .map((j) => JSON.parse(j))
  }
  /** PiG's `GetEntries()`: each entry's line exactly as written, as a Buffer. */
  getRawEntries() {
    return this.#reader().rawEntries()
  }
  branch(branchFromId) {
    if (typeof branchFromId !== 'string') throw new Error(`Entry ${branchFromId} not found`)
    this.#moveLeaf(branchFromId, this.#reader())
  }
  resetLeaf() {
    this.#moveLeaf(null, this.#keys())
  }

  /**
   * Take in entries another process appended to the file since it was opened (or last
   * refreshed); pi's class has no such method. Returns how many came in; the leaf moves
   * to the last entry, as on opening.
   */
  refresh() {
    const { added, rebuilt } = this.#native.refresh()
    // The file's session answers again (see `#reader()`).
    this.#frozen = null
    // A file replaced or rewritten is read anew: the objects held are let go.
    if (rebuilt) this.#entries = new Array(this.#native.entryLen())
    else this.#entries.length = this.#native.entryLen()
    return added
  }

  // ----- writing: pi's appends, each returning what pi's returns ------------------------

  /**
   * pi's append `method` with `args` (by parameter name): the native side builds the entry
   * as pi's method does, checks it, writes it and moves the leaf to it, and says which of
   * its members are the caller's arguments. The entry kept holds the caller's values
   * there (as pi's does: `getEntries()` hands back the very `message` object appended)
   * and the line's values everywhere else. A failed write leaves the session as it was.
   */
  #call(method, args) {
    const r = this.#native.appendCall(method, JSON.stringify(args))
    const entry = assemble(r, args)
    const n = this.#native.entryLen()
    if (r.anew) this.#entries = new Array(n)
    else this.#entries.length = n
    if (r.number != null) this.#entries[r.number] = entry
    return entry
  }

  /** Append a message as a child of the leaf, which moves to it. Returns its id. */
  appendMessage(message) {
    return this.#call('appendMessage', { message }).id
  }

  appendThinkingLevelChange(thinkingLevel) {
    return this.#call('appendThinkingLevelChange', { thinkingLevel }).id
  }

  appendModelChange(provider, modelId) {
    return this.#call('appendModelChange', { provider, modelId }).id
  }

  /** Usage outside the model's context. Returns the entry itself, as pi does. */
  appendUsage(kind, provider, model, usage, note) {
    return this.#call('appendUsage', { kind, provider, model, usage, note })
  }

  /** A compaction: it records the system message in force, as pi's does. */
  appendCompaction(summary, firstKeptEntryId, tokensBefore, details, fromHook, usage) {
    return this.#call('appendCompaction', { summary, firstKeptEntryId, tokensBefore, details, fromHook, usage }).id
  }

  appendCustomEntry(customType, data) {
    return this.#call('appendCustomEntry', { customType, data }).id
  }

  /** A display name: runs of line breaks become one space, then trimmed. */
  appendSessionInfo(name) {
    return this.#call('appendSessionInfo', { name }).id
  }

  appendCustomMessageEntry(customType, content, display, details) {
    return this.#call('appendCustomMessageEntry', { customType, content, display, details }).id
  }

  /** A branch-local edit of an earlier entry's model-visible content (`null`: drop it). */
  appendContextEdit(targetId, replacement) {
    return this.#call('appendContextEdit', { targetId, replacement }).id
  }

  /** Set a label on an entry (`undefined` or `''` clears it). */
  appendLabelChange(targetId, label) {
    return this.#call('appendLabelChange', { targetId, label }).id
  }

  /** Move the leaf back to `branchFromId` (`null`: before the first entry) and record there a summary of the branch left. */
  branchWithSummary(branchFromId, summary, details, fromHook, usage) {
    return this.#call('branchWithSummary', { branchFromId, summary, details, fromHook, usage }).id
  }

  /**
   * A new session holding only the path from the root to `leafId` (labels kept), in a new
   * file when persisting. Returns that file, or `undefined` for an in-memory session.
   */
  createBranchedSession(leafId) {
    // The objects of the path now: each entry kept is a copy of its own, with the
    // members the native side relinked.
    const path = this.getBranch(leafId)
    const leaf = path.length > 0 ? path[path.length - 1].id : leafId
    const { file, kept } = this.#native.createBranchedSession(String(leaf))
    this.#entries = new Array(this.#native.entryLen())
    for (let k = 0; k < kept.length && k < this.#entries.length; k++) {
      const copy = { ...path[kept[k].at], parentId: kept[k].parentId }
      if (kept[k].compaction) copy.firstKeptEntryId = kept[k].firstKeptEntryId
      this.#entries[k] = copy
    }
    const header = this.#native.header()
    if (!this.#persist && header && !('parentSession' in header)) header.parentSession = undefined
    this.#header = header
    this.#sessionId = header.id
    if (this.#persist) {
      this.#file = file ?? undefined
      return this.#file
    }
    return undefined
  }
}

// ----- the module's functions, beside the class (pi's session-manager exports) -----------

/** Every line of a file that `JSON.parse` accepts, unmigrated; `[]` when it is no session. */
function loadEntriesFromFile(filePath) {
  const path = normalizePath(filePath)
  return call(() => native.NativeSession.loadEntries(path))
}

/** The JSON lines of a text, each parsed; lines that do not parse are left out. */
function parseSessionEntries(content) {
  const entries = []
  for (const line of content.trim().split('\n')) {
    if (!line.trim()) continue
    try {
      entries.push(JSON.parse(line))
    } catch {
      // A malformed line is skipped, as pi skips it.
    }
  }
  return entries
}

/** Bring entries of an old session format to the current one, in place. */
function migrateSessionEntries(entries) {
  migrateToCurrentVersion(entries)
}

/** The last compaction entry, or `null`. */
function getLatestCompactionEntry(entries) {
  for (let i = entries.length - 1; i >= 0; i--) if (entries[i].type === 'compaction') return entries[i]
  return null
}

/** The compaction-aware entries of the path to `leafId` (`undefined`: the last entry). */
function buildContextEntries(entries, leafId, _byId) {
  const { n, at } = scratch(entries, leafId)
  return n.contextEntryNumbers().map(at)
}

/** The messages the model sees at `leafId`, with the thinking level and model in force. */
function buildSessionContext(entries, leafId, _byId) {
  const { n, at } = scratch(entries, leafId)
  return contextOf(n.context(), at)
}

/** The newest session file of a folder (of `cwd`'s sessions, when given), or `null`. */
function findMostRecentSession(sessionDir, cwd) {
  return native.findMostRecentSession(normalizePath(sessionDir), cwd ? resolvePath(cwd) : null)
}

/**
 * A session followed while it is written (`follow`, `followLatest`): an `EventEmitter`
 * and an async iterator of the same events, each one object with a `type`:
 * - `start` `{file, why, header}`: the file is read from its start (`why`: `first`,
 *   `rewritten` when pi migrated or `recover` rewrote it, `recreated` after it was gone,
 *   `switched` to a newer session of the project); a mirror starts over. Its complete
 *   entries come next, as one `entries` event.
 * - `entries` `{file, entries}`: entries whose lines were completed since, in file order,
 *   each parsed from its line exactly as written (a line torn in two writes waits for its
 *   end).
 * - `gone` `{file}`: the file was deleted or renamed away; following waits for it.
 * An `error` (the file is no session, or cannot be read) stops the follower; an iterator
 * throws it. `close()` stops it (breaking out of a `for await` closes it too); until then
 * it keeps the process alive, as a watcher does.
 */
class SessionFollower extends EventEmitter {
  #native = null
  #closed = false

  constructor(file, latest, options) {
    super()
    const onlyNew = Boolean(options && options.onlyNew)
    try {
      this.#native = new native.NativeFollower(file, latest, onlyNew, (e) => this.#deliver(e))
    } catch (e) {
      throw piError(e)
    }
  }

  /** Whether `close()` was called, or an error stopped it. */
  get closed() {
    return this.#closed
  }

  #deliver(e) {
    if (this.#closed) return
    switch (e.kind) {
      case 'start':
        this.emit('start', { type: 'start', file: e.file, why: e.why, header: JSON.parse(e.header) })
        break
      case 'entries':
        this.emit('entries', { type: 'entries', file: e.file, entries: e.lines.map((l) => JSON.parse(l)) })
        break
      case 'gone':
        this.emit('gone', { type: 'gone', file: e.file })
        break
      case 'error': {
        const err = piError(new Error(e.error))
        this.close()
        this.emit('error', err)
        break
      }
    }
  }

  /** Stop following: no event after this; the process may exit. */
  close() {
    if (this.#closed) return
    this.#closed = true
    this.#native.close()
    this.emit('close')
  }

  [Symbol.asyncIterator]() {
    const queue = []
    let failure = null
    let done = false
    let wake = null
    const names = ['start', 'entries', 'gone']
    const push = (e) => {
      queue.push(e)
      if (wake) wake()
    }
    const fail = (err) => {
      failure = err
      if (wake) wake()
    }
    const end = () => {
      done = true
      if (wake) wake()
    }
    const detach = () => {
      for (const n of names) this.off(n, push)
      this.off('error', fail)
      this.off('close', end)
    }
    for (const n of names) this.on(n, push)
    this.on('error', fail)
    this.on('close', end)
    if (this.#closed) done = true
    return {
      next: async () => {
        for (;;) {
          if (queue.length) return { value: queue.shift(), done: false }
          if (failure) {
            const err = failure
            failure = null
            done = true
            detach()
            throw err
          }
          if (done) {
            detach()
            return { value: undefined, done: true }
          }
          await new Promise((r) => (wake = r))
          wake = null
        }
      },
      return: async () => {
        detach()
        this.close()
        return { value: undefined, done: true }
      },
      [Symbol.asyncIterator]() {
        return this
      },
    }
  }
}

/** Follow a session file while it is written (`options.onlyNew`: only what is appended from now on). */
function follow(file, options) {
  return new SessionFollower(resolvePath(file), null, options)
}

/**
 * Follow the newest session of the project `cwd` (default: the process's), switching when
 * pi starts a newer one. `options.sessionDir` and `options.agentDir` as pi's;
 * `options.flavor`: `pig` for PiG's folders.
 */
function followLatest(cwd, options) {
  const o = options || {}
  const latest = {
    cwd: resolvePath(cwd ?? process.cwd()),
    sessionDir: o.sessionDir != null ? resolvePath(o.sessionDir) : undefined,
    agentDir: o.agentDir != null ? resolvePath(o.agentDir) : undefined,
    flavor: o.flavor,
  }
  return new SessionFollower(null, latest, o)
}

module.exports = {
  SessionManager,
  CURRENT_SESSION_VERSION,
  assertValidSessionId,
  loadEntriesFromFile,
  parseSessionEntries,
  migrateSessionEntries,
  getLatestCompactionEntry,
  buildContextEntries,
  buildSessionContext,
  findMostRecentSession,
  getDefaultSessionDir,
  follow,
  followLatest,
  SessionFollower,
}

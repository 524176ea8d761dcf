// Types of pi-session's Node package: pi 1.6.0's `SessionManager` and its module's
// functions, with pi's names. Entries, headers and messages are pi's JSON objects as stored (after pi's
// in-memory migration of old files); they are typed loosely here, as pi's own types
// live in pi's package.

import { EventEmitter } from 'node:events'

/** A session file's header line (`type: "session"`). */
export interface SessionHeader {
  type: 'session'
  version?: number
  id: string
  timestamp: string
  cwd: string
  parentSession?: string
  [key: string]: unknown
}

/** One entry of a session (a line after the header). */
export interface SessionEntry {
  type: string
  id: string
  parentId: string | null
  timestamp: string
  [key: string]: unknown
}

/** A node of `getTree()`. */
export interface SessionTreeNode {
  entry: SessionEntry
  children: SessionTreeNode[]
  label: unknown
  labelTimestamp: unknown
}

/** What `buildSessionContext()` gives: the messages sent to the model. */
export interface SessionContext {
  messages: Array<Record<string, unknown>>
  thinkingLevel: string
  model: { provider: string; modelId: string } | null
}

/** pi's `SessionInfo`: one session of a listing. */
export interface SessionInfo {
  path: string
  id: string
  cwd: string
  name: string | undefined
  parentSessionPath: string | undefined
  created: Date
  modified: Date
  messageCount: number
  firstMessage: string
  allMessagesText: string
}

/** Progress of a listing: files done, files to do, and at times the sessions so far. */
export type ListProgress = (loaded: number, total: number, partialSessions?: SessionInfo[]) => void

/** What `newSession`, `create`, `inMemory` and `forkFrom` take. */
export interface NewSessionOptions {
  id?: string
  parentSession?: string
}

/** pi's `SessionManager`: a session file (read-only until the first append) or a new session. */
export declare class SessionManager {
  constructor(
    cwd: string,
    sessionDir: string,
    sessionFile: string | undefined,
    persist: boolean,
    newSessionOptions?: NewSessionOptions,
    preloadedFileEntries?: Array<SessionHeader | SessionEntry>,
  )
  /** One project's sessions, newest first (off the JavaScript thread). */
  static list(cwd: string, sessionDir?: string, onProgress?: ListProgress, signal?: AbortSignal): Promise<SessionInfo[]>
  /** Every session under pi's sessions root, or in one flat folder, newest first. */
  static listAll(onProgress?: ListProgress, signal?: AbortSignal): Promise<SessionInfo[]>
  static listAll(sessionDir: string, onProgress?: ListProgress, signal?: AbortSignal): Promise<SessionInfo[]>
  static listAll(signal: AbortSignal): Promise<SessionInfo[]>
  /** Open a session file (an old-format file is migrated in memory, rewritten only on the first append). */
  static open(path: string, sessionDir?: string, cwdOverride?: string): SessionManager
  /** A new session in `sessionDir` (default: the project's folder), written with its first user or assistant message. */
  static create(cwd: string, sessionDir?: string, options?: NewSessionOptions): SessionManager
  /** The most recent session of the folder, or a new one. */
  static continueRecent(cwd: string, sessionDir?: string): SessionManager
  /** A session never written to disk, optionally of entries held elsewhere. */
  static inMemory(cwd?: string, options?: NewSessionOptions, entries?: Array<SessionHeader | SessionEntry>): SessionManager
  /** A new session file in the target project holding every entry of the source. */
  static forkFrom(sourcePath: string, targetCwd: string, sessionDir?: string, options?: NewSessionOptions): SessionManager
  /** The file of the session with this exact id, or `undefined`. */
  static findById(cwd: string, id: string, sessionDir?: string): string | undefined
  isPersisted(): boolean
  getCwd(): string
  getSessionDir(): string
  usesDefaultSessionDir(): boolean
  getSessionId(): string
  getSessionFile(): string | undefined
  setSessionFile(sessionFile: string): void
  newSession(options?: NewSessionOptions): string | undefined
  getHeader(): SessionHeader | null
  getEntryCount(): number
  getEntries(): SessionEntry[]
  getEntry(id: string): SessionEntry | undefined
  getLeafId(): string | null
  getLeafEntry(): SessionEntry | undefined
  getChildren(parentId: string | null): SessionEntry[]
  getLabel(id: string): string | undefined
  getBranch(fromId?: string): SessionEntry[]
  buildContextEntries(): SessionEntry[]
  buildSessionContext(): SessionContext
  getTree(): SessionTreeNode[]
  getSessionName(): string | undefined
  /**
   * PiG's `GetBranch()`: the current branch, root first, each entry flattened to the
   * fields a reader uses (`text` is the string content or the text blocks joined by
   * `\n`; `toolCalls` names an assistant's `toolCall`/`tool_use` blocks).
   */
  getBranchView(): BranchViewItem[]
  /** PiG's `GetEntries()`: each entry's line exactly as written (never re-encoded). */
  getRawEntries(): Buffer[]
  /** Move the leaf to an entry (throws pi's `Entry X not found`). */
  branch(branchFromId: string): void
  /** Set the leaf to none. */
  resetLeaf(): void
  /** Take in entries another process appended to the file (not in pi's class). Returns how many. */
  refresh(): number
  appendMessage(message: Record<string, unknown>): string
  appendThinkingLevelChange(thinkingLevel: string): string
  appendModelChange(provider: string, modelId: string): string
  appendUsage(kind: string, provider: string, model: string, usage: unknown, note?: string): SessionEntry
  appendCompaction(
    summary: string,
    firstKeptEntryId: string | undefined,
    tokensBefore: number,
    details?: unknown,
    fromHook?: boolean,
    usage?: unknown,
  ): string
  appendCustomEntry(customType: string, data?: unknown): string
  appendSessionInfo(name: string): string
  appendCustomMessageEntry(customType: string, content: unknown, display: boolean, details?: unknown): string
  appendContextEdit(targetId: string, replacement: { content: unknown } | null): string
  appendLabelChange(targetId: string, label?: string): string
  branchWithSummary(branchFromId: string | null, summary: string, details?: unknown, fromHook?: boolean, usage?: unknown): string
  createBranchedSession(leafId?: string): string | undefined
}

export declare const CURRENT_SESSION_VERSION: 3
export declare function assertValidSessionId(id: string): void
/** Every line of a file that `JSON.parse` accepts (unmigrated), or `[]` when it is no session. */
export declare function loadEntriesFromFile(filePath: string): Array<SessionHeader | SessionEntry>
export declare function parseSessionEntries(content: string): unknown[]
/** Bring entries of an old format to the current one, in place. */
export declare function migrateSessionEntries(entries: Array<SessionHeader | SessionEntry>): void
export declare function getLatestCompactionEntry(entries: SessionEntry[]): SessionEntry | null
export declare function buildContextEntries(entries: SessionEntry[], leafId?: string | null, byId?: Map<string, SessionEntry>): SessionEntry[]
export declare function buildSessionContext(entries: SessionEntry[], leafId?: string | null, byId?: Map<string, SessionEntry>): SessionContext
export declare function findMostRecentSession(sessionDir: string, cwd?: string): string | null
export declare function getDefaultSessionDir(cwd: string, agentDir?: string): string

/** One entry of `getBranchView()`; a field without a value is absent. */
export interface BranchViewItem {
  id?: string
  parentId?: string
  type?: string
  role?: string
  text: string
  toolName?: string
  toolCalls: string[]
  provider?: string
  model?: string
  timestamp?: string
  messageTimestamp?: number
}

/** What a follower hands out: the file read from its start (a mirror starts over; its entries come next). */
export interface FollowStart {
  type: 'start'
  file: string
  /** `first`; `rewritten` (pi's migration, a `recover`); `recreated` after it was gone; `switched` to a newer session. */
  why: 'first' | 'rewritten' | 'recreated' | 'switched'
  header: SessionHeader
}
/** Entries whose lines were completed since the last event, in file order, each parsed from its line as written. */
export interface FollowEntries {
  type: 'entries'
  file: string
  entries: SessionEntry[]
}
/** The file was deleted or renamed away; following waits for it. */
export interface FollowGone {
  type: 'gone'
  file: string
}
export type FollowEvent = FollowStart | FollowEntries | FollowGone

export interface FollowOptions {
  /** Skip what the file holds now: only entries appended from now on. */
  onlyNew?: boolean
}
export interface FollowLatestOptions extends FollowOptions {
  sessionDir?: string
  agentDir?: string
  /** `pig`: PiG's folders and variables. */
  flavor?: 'pi' | 'pig'
}

/**
 * A session followed while it is written: events as an `EventEmitter`'s (`start`,
 * `entries`, `gone`, `error`, `close`) and as an async iterator (which throws the error;
 * leaving the loop closes the follower). Keeps the process alive until `close()`.
 */
export declare class SessionFollower extends EventEmitter implements AsyncIterable<FollowEvent> {
  private constructor()
  readonly closed: boolean
  close(): void
  on(event: 'start', listener: (e: FollowStart) => void): this
  on(event: 'entries', listener: (e: FollowEntries) => void): this
  on(event: 'gone', listener: (e: FollowGone) => void): this
  on(event: 'error', listener: (err: Error) => void): this
  on(event: 'close', listener: () => void): this
  [Symbol.asyncIterator](): AsyncIterator<FollowEvent>
}
/** Follow a session file while it is written. */
export declare function follow(file: string, options?: FollowOptions): SessionFollower
/** Follow the newest session of the project `cwd` (default: the process's), switching when pi starts a newer one. */
export declare function followLatest(cwd?: string, options?: FollowLatestOptions): SessionFollower

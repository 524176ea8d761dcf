// Types of pi-session's Node package: the read side of pi 1.6.0's `SessionManager`, with
// pi's names. Entries, headers and messages are pi's JSON objects as stored (after pi's
// in-memory migration of old files); they are typed loosely here, as pi's own types
// live in pi's package.

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

/** pi's `SessionManager`, read side, over a file opened read-only. */
export declare class SessionManager {
  /** One project's sessions, newest first (off the JavaScript thread). */
  static list(cwd: string, sessionDir?: string, onProgress?: ListProgress, signal?: AbortSignal): Promise<SessionInfo[]>
  /** Every session under pi's sessions root, or in one flat folder, newest first. */
  static listAll(onProgress?: ListProgress, signal?: AbortSignal): Promise<SessionInfo[]>
  static listAll(sessionDir: string, onProgress?: ListProgress, signal?: AbortSignal): Promise<SessionInfo[]>
  static listAll(signal: AbortSignal): Promise<SessionInfo[]>
  /** Open a session file (read-only: an old-format file is migrated in memory only). */
  static open(path: string, sessionDir?: string, cwdOverride?: string): SessionManager
  isPersisted(): boolean
  getCwd(): string
  getSessionDir(): string
  getSessionId(): string
  getSessionFile(): string
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
  /** Move the leaf to an entry (throws pi's `Entry X not found`). */
  branch(branchFromId: string): void
  /** Set the leaf to none. */
  resetLeaf(): void
}

export declare const CURRENT_SESSION_VERSION: 3

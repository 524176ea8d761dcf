// Goldens for `pi-session export --format jsonl` (tests/it/export.rs): pi 1.6.0's own jsonl
// export, `serializeSessionBranch(SessionManager.open(FILE))` after `branch(LEAF)` (what pi's
// `/export FILE.jsonl` writes), and what pi reads back from that text: `getHeader()` and
// `getBranch()` of `SessionManager.open` on it. Writes corpus/golden/export/<name>.jsonl.json
// ({source, leaf, text, header, branch}); the header's timestamp is the time of the export,
// which the test replaces. Run from the repository root:
//   node corpus/export/bless.mjs [ORACLE_DIR]
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const oracle = resolve(process.argv[2] ?? "../shared/oracle");
const pi = await import(pathToFileURL(join(oracle, "lib/pi.mjs")).href);
const { SessionManager } = await pi.loadSessionManagerModule();
const { serializeSessionBranch } = await import(
  pathToFileURL(join(pi.PACKAGE_DIR, "dist", "core", "session-export.js")).href
);

// name, corpus file, leaf (null: the current one)
const CASES = [
  ["branches", "corpus/valid/branches.jsonl", null],
  ["branches-side", "corpus/valid/branches.jsonl", "56c43613"],
  ["labels", "corpus/valid/labels-set-clear-reset.jsonl", null],
  ["all-entry-types", "corpus/valid/all-entry-types.jsonl", null],
  ["garbage-lines", "corpus/malformed/binary-garbage-lines.jsonl", null],
  ["surrogates", "corpus/valid/escaped-surrogate-pairs.jsonl", null],
  ["duplicate-keys", "corpus/valid/duplicate-keys.jsonl", null],
];

for (const [name, source, leaf] of CASES) {
  const dir = mkdtempSync(join(tmpdir(), "pi-export-golden-"));
  try {
    copyFileSync(source, join(dir, "s.jsonl"));
    const sm = SessionManager.open(join(dir, "s.jsonl"));
    if (leaf) sm.branch(leaf);
    const text = serializeSessionBranch(sm);
    writeFileSync(join(dir, "out.jsonl"), text);
    const back = SessionManager.open(join(dir, "out.jsonl"));
    const golden = { source, leaf, text, header: back.getHeader(), branch: back.getBranch() };
    writeFileSync(`corpus/golden/export/${name}.jsonl.json`, JSON.stringify(golden, null, 2) + "\n");
    console.log(`${name}: ${golden.branch.length} entries`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// Goldens for `pi-session branch` (tests/it/cli_writes.rs): pi 1.6.0's own
// `SessionManager.open(FILE).createBranchedSession(LEAF)` on a copy of a corpus file, opened
// by a RELATIVE path from its folder (pi resolves it: the new header's `parentSession` is
// absolute). Writes corpus/golden/branch/<name>.json: the folder pi ran in, the path it
// opened, the leaf, the path it returned and the new file's text, as pi wrote them (the
// test replaces the folder, the new session id, its time and new label ids).
// Run from the repository root: node corpus/bless_branch.mjs [ORACLE_DIR]
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const oracle = resolve(process.argv[2] ?? "../shared/oracle");
const { loadSessionManagerModule } = await import(pathToFileURL(join(oracle, "lib/pi.mjs")).href);
const { SessionManager } = await loadSessionManagerModule();

// name, corpus file, the path pi opens (relative to the copy's folder), leaf
const CASES = [
  ["branches-relative", "corpus/valid/branches.jsonl", "s.jsonl", "56c43613"],
  ["branches-dotdot", "corpus/valid/branches.jsonl", "sub/../s.jsonl", "500d9c79"],
  ["labels-relative", "corpus/valid/labels-set-clear-reset.jsonl", "s.jsonl", "d2c88cf5"],
  ["all-entry-types", "corpus/valid/all-entry-types.jsonl", "./s.jsonl", "c2266074"],
];

const root = process.cwd();
mkdirSync(join(root, "corpus/golden/branch"), { recursive: true });
for (const [name, source, opened, leaf] of CASES) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "pi-branch-golden-")));
  try {
    mkdirSync(join(dir, "sub"));
    copyFileSync(join(root, source), join(dir, "s.jsonl"));
    process.chdir(dir);
    const sm = SessionManager.open(opened);
    const path = sm.createBranchedSession(leaf);
    const text = readFileSync(path, "utf8");
    process.chdir(root);
    const golden = { dir, source, opened, leaf, path, text };
    writeFileSync(join(root, "corpus/golden/branch", `${name}.json`), JSON.stringify(golden, null, 2) + "\n");
    console.log(`${name}: ${path}`);
  } finally {
    process.chdir(root);
    rmSync(dir, { recursive: true, force: true });
  }
}

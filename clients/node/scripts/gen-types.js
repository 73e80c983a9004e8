'use strict';
/**
 * Generates the TypeScript types of the agentloop.v1 API into gen/ with
 * proto-loader-gen-types, or with --check regenerates them into a temporary
 * folder and fails when they differ from the committed ones (the same drift
 * check `make check-proto` does for the Python stubs).
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { API_FILES, STATUS_FILES, PROTO_ROOT, GOOGLE_ROOT } = require('../loader.js');

const PACKAGE_DIR = path.resolve(__dirname, '..');
// Run from the repository root with relative include folders: the generated
// files name their source ("Original file: ..."), which must not depend on
// where the repository was cloned.
const REPO_ROOT = path.resolve(PACKAGE_DIR, '..', '..');
const GEN_DIR = path.join(PACKAGE_DIR, 'gen');
const GENERATOR = path.join(PACKAGE_DIR, 'node_modules', '.bin', 'proto-loader-gen-types');
/** Must match LOADER_OPTIONS in loader.js: the types describe what those options produce. */
const GEN_ARGS = ['--keepCase', '--longs=String', '--enums=String', '--defaults', '--oneofs', '--includeComments', '--grpcLib=@grpc/grpc-js'];

function generate(outDir) {
  execFileSync(
    GENERATOR,
    // The files first: --includeDirs is an array option that would swallow them.
    [
      ...API_FILES,
      ...STATUS_FILES,
      ...GEN_ARGS,
      `--outDir=${outDir}`,
      '--includeDirs',
      path.relative(REPO_ROOT, PROTO_ROOT),
      path.relative(REPO_ROOT, GOOGLE_ROOT),
    ],
    { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'inherit'] },
  );
}

function listFiles(dir, prefix = '') {
  if (!fs.existsSync(dir)) return new Map();
  const out = new Map();
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const rel = path.join(prefix, entry.name);
    if (entry.isDirectory()) {
      for (const [name, body] of listFiles(path.join(dir, entry.name), rel)) out.set(name, body);
    } else {
      out.set(rel, fs.readFileSync(path.join(dir, entry.name), 'utf8'));
    }
  }
  return out;
}

function check() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentloop-ts-'));
  try {
    generate(tmp);
    const fresh = listFiles(tmp);
    const committed = listFiles(GEN_DIR);
    const problems = [];
    for (const name of [...fresh.keys()].sort()) {
      if (!committed.has(name)) problems.push(`missing: ${name}`);
      else if (committed.get(name) !== fresh.get(name)) problems.push(`differs: ${name}`);
    }
    for (const name of [...committed.keys()].sort()) {
      if (!fresh.has(name)) problems.push(`stale extra file: ${name}`);
    }
    if (problems.length > 0) {
      console.error('generated TypeScript types are out of date; run `make ts` and commit:');
      for (const line of problems) console.error(`  ${line}`);
      return 1;
    }
    console.log(`generated TypeScript types are up to date (${fresh.size} files)`);
    return 0;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

function main() {
  if (process.argv.includes('--check')) return check();
  fs.rmSync(GEN_DIR, { recursive: true, force: true });
  generate(GEN_DIR);
  console.log(`generated ${listFiles(GEN_DIR).size} TypeScript files into ${path.relative(process.cwd(), GEN_DIR) || 'gen'}`);
  return 0;
}

process.exitCode = main();

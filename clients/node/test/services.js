'use strict';
/**
 * Starts the real services as processes, the way `agentloop demo` does: the
 * scripted model, the Reasoner, the ToolService and the gateway, each on port
 * 0, each announcing the port it bound on its first stdout line.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { spawn } = require('node:child_process');

const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
const AGENTLOOP = path.join(REPO_ROOT, '.venv', 'bin', 'agentloop');
const PORT_LINE = /listening on (?:port |http:\/\/[^:]+:)(\d+)/;
const START_TIMEOUT_MS = 60_000;

/** Spawns one service; its logs go to <logDir>/<name>.log, quoted when it fails to start. */
function startChild(name, args, env, logDir) {
  const logPath = path.join(logDir, `${name}.log`);
  const log = fs.openSync(logPath, 'w');
  const child = spawn(AGENTLOOP, args, { env, stdio: ['ignore', 'pipe', log] });
  fs.closeSync(log);
  const logTail = () => fs.readFileSync(logPath, 'utf8').split('\n').slice(-20).join('\n');
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not announce its port within ${START_TIMEOUT_MS} ms:\n${logTail()}`));
    }, START_TIMEOUT_MS);
    const lines = readline.createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      const match = PORT_LINE.exec(line);
      if (match) {
        clearTimeout(timer);
        resolve({ name, child, port: Number(match[1]) });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with code ${code} before announcing its port:\n${logTail()}`));
    });
  });
}

async function stopChild({ child }) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** Starts every service; resolves to {ports, stop()}. Runs and logs live in a throwaway folder. */
async function startServices() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentloop-node-'));
  const env = { ...process.env, DATABASE_URL: `sqlite+aiosqlite:///${path.join(dataDir, 'agentloop.db')}` };
  const children = [];
  const stop = async () => {
    for (const child of children.reverse()) await stopChild(child);
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const model = await startChild('model', ['model-server', '--port', '0'], env, dataDir);
    children.push(model);
    env.OPENAI_BASE_URL = `http://127.0.0.1:${model.port}/v1`;
    const [reasoner, tools] = await Promise.all([
      startChild('reasoner', ['serve', 'reasoner', '--port', '0'], env, dataDir),
      startChild('tools', ['serve', 'tools', '--port', '0'], env, dataDir),
    ]);
    children.push(reasoner, tools);
    const gateway = await startChild(
      'gateway',
      ['serve', 'gateway', '--port', '0', '--reasoner', `127.0.0.1:${reasoner.port}`, '--tools-addr', `127.0.0.1:${tools.port}`],
      env,
      dataDir,
    );
    children.push(gateway);
    const ports = Object.fromEntries(children.map((c) => [c.name, c.port]));
    return { ports, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

module.exports = { startServices };

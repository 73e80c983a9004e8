'use strict';
/**
 * The Node client against the real services: a streamed Run with incremental
 * tokens and tool events, Invoke, and the error details of failed calls,
 * decoded from the grpc-status-details-bin trailer.
 */
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const grpc = require('@grpc/grpc-js');
const { loadApi, statusDetails } = require('../loader.js');
const { startServices } = require('./services.js');

// The question the built-in scripted model answers with two parallel tool calls, then an answer.
const QUESTION = 'What is 1234 * 5678, and what time is it in UTC?';
const DEADLINE_MS = 60_000;

let services;
let agent;

before(async () => {
  services = await startServices();
  const api = loadApi();
  agent = new api.agentloop.v1.Agent(`127.0.0.1:${services.ports.gateway}`, grpc.credentials.createInsecure());
});

after(async () => {
  if (agent) agent.close();
  if (services) await services.stop();
});

function deadline() {
  return new Date(Date.now() + DEADLINE_MS);
}

/** Every event of one streamed Run. */
function runEvents(request) {
  return new Promise((resolve, reject) => {
    const events = [];
    const call = agent.Run(request, { deadline: deadline() });
    call.on('data', (response) => events.push(response.event));
    call.on('error', reject);
    call.on('end', () => resolve(events));
  });
}

function unary(method, request) {
  return new Promise((resolve, reject) => {
    agent[method](request, { deadline: deadline() }, (error, response) => (error ? reject(error) : resolve(response)));
  });
}

async function failure(method, request) {
  try {
    await unary(method, request);
  } catch (error) {
    return error;
  }
  assert.fail(`${method} succeeded; an error was expected`);
}

function only(details, type) {
  const found = details.details.filter((d) => d.type === type);
  assert.equal(found.length, 1, `expected one ${type} in ${JSON.stringify(details)}`);
  return found[0].value;
}

for (const streamMode of ['STREAM_MODE_FINAL_ONLY', 'STREAM_MODE_ALL_STEPS']) {
  test(`Run streams tokens and tool events (${streamMode})`, async () => {
    const events = await runEvents({ input: QUESTION, user_id: 'node', options: { stream_mode: streamMode } });
    const kinds = events.map((e) => e.event);
    assert.equal(kinds.at(-1), 'final', `the run ended with ${kinds.at(-1)}`);
    const final = events.at(-1).final;

    const starts = events.filter((e) => e.event === 'tool_start').map((e) => e.tool_start.name);
    assert.deepEqual(starts.sort(), ['calculator', 'current_time']);
    const ends = events.filter((e) => e.event === 'tool_end');
    assert.equal(ends.length, 2);
    const product = ends.find((e) => e.tool_end.name === 'calculator').tool_end.result;
    assert.equal(product.error_kind, 'TOOL_ERROR_KIND_NONE');
    assert.match(product.content, /7006652/);

    const tokens = events.filter((e) => e.event === 'llm_token').map((e) => e.llm_token.token);
    assert.ok(tokens.length > 1, `expected the answer in several tokens, got ${tokens.length}`);
    assert.ok(kinds.indexOf('llm_token') < kinds.indexOf('final'), 'tokens arrive before the final event');
    assert.equal(tokens.join(''), final.final_reply);
    assert.match(final.final_reply, /7006652/);

    // int64 fields arrive as decimal strings (longs: String), in order.
    const sequences = events.map((e) => e.sequence);
    for (const sequence of sequences) assert.equal(typeof sequence, 'string');
    assert.deepEqual(sequences.map(BigInt), [...sequences.map(BigInt)].sort((a, b) => (a < b ? -1 : 1)));
    assert.ok(events.every((e) => e.run_id === events[0].run_id && e.run_id !== ''));
  });
}

test('Invoke returns the outcome in one response', async () => {
  const response = await unary('Invoke', { input: QUESTION, user_id: 'node' });
  assert.match(response.final.final_reply, /7006652/);
  assert.notEqual(response.run_id, '');
  assert.notEqual(response.thread_id, '');
  assert.deepEqual(response.final.metadata.tools_used.sort(), ['calculator', 'current_time']);
  assert.equal(response.tool_results.length, 2);

  const thread = await unary('GetThread', { thread_id: response.thread_id, user_id: 'node' });
  assert.equal(thread.messages[0].role, 'ROLE_USER');
  assert.equal(thread.messages[0].content, QUESTION);
  assert.equal(typeof thread.created_at.seconds, 'string');
});

test('a bad field comes with a BadRequest naming it', async () => {
  const error = await failure('GetThread', { thread_id: '', user_id: 'node' });
  assert.equal(error.code, grpc.status.INVALID_ARGUMENT);
  const details = statusDetails(error);
  assert.ok(details, 'the error carries grpc-status-details-bin');
  assert.equal(details.code, grpc.status.INVALID_ARGUMENT);
  const badRequest = only(details, 'google.rpc.BadRequest');
  assert.deepEqual(
    badRequest.field_violations.map((v) => v.field),
    ['thread_id'],
  );
});

test('an unknown run comes with ErrorInfo RUN_NOT_FOUND', async () => {
  const error = await failure('Cancel', { run_id: 'no-such-run', user_id: 'node' });
  assert.equal(error.code, grpc.status.NOT_FOUND);
  const info = only(statusDetails(error), 'google.rpc.ErrorInfo');
  assert.equal(info.reason, 'RUN_NOT_FOUND');
  assert.equal(info.domain, 'agentloop.dev');
  assert.equal(info.metadata.run_id, 'no-such-run');
});

/** Every event of one Watch. */
function watchEvents(request) {
  return new Promise((resolve, reject) => {
    const events = [];
    const call = agent.Watch(request, { deadline: deadline() });
    call.on('data', (response) => events.push(response.event));
    call.on('error', reject);
    call.on('end', () => resolve(events));
  });
}

test('a thread over 16 MiB is read through Run, Invoke, GetThread and Watch with default limits', async () => {
  // Seeded in one Run: a client sends any size by default (only receiving is limited).
  const history = Array.from({ length: 18 }, (_, i) => ({
    role: i % 2 === 0 ? 'ROLE_USER' : 'ROLE_ASSISTANT',
    content: String(i).padStart(4, '0') + 'x'.repeat((1 << 20) - 4),
  }));
  const run = await runEvents({ input: 'and now?', user_id: 'node-big', history });
  assert.equal(run.at(-1).event, 'final');
  const final = run.at(-1).final;
  // What this run added (its question, perhaps a context summary, the answer), never the 18 MiB before it.
  const added = final.run_messages.map((m) => m.content);
  assert.equal(added[0], 'and now?');
  assert.equal(added.at(-1), final.final_reply);
  const threadId = run[0].thread_id;

  const invoked = await unary('Invoke', { input: 'once more', user_id: 'node-big', thread_id: threadId });
  assert.equal(invoked.final.run_messages[0].content, 'once more');
  assert.equal(invoked.final.run_messages.at(-1).content, invoked.final.final_reply);

  const watched = await watchEvents({ run_id: run[0].run_id, user_id: 'node-big' });
  assert.equal(watched.at(-1).final.final_reply, final.final_reply);

  const contents = [];
  let pageToken = '';
  let pages = 0;
  do {
    const page = await unary('GetThread', { thread_id: threadId, user_id: 'node-big', page_token: pageToken });
    contents.push(...page.messages.map((m) => m.content));
    pageToken = page.next_page_token;
    pages += 1;
  } while (pageToken);
  assert.ok(pages > 4, `${pages} pages for ${contents.length} messages`);
  assert.ok(contents.reduce((n, c) => n + c.length, 0) > 16 * 1024 * 1024);
  assert.deepEqual(contents.slice(0, 18).map((c) => c.slice(0, 4)), history.map((m) => m.content.slice(0, 4)));
  assert.equal(contents.length, 18 + added.length + invoked.final.run_messages.length);
  assert.equal(contents.at(-1), invoked.final.final_reply);
});

test('a Run retried with its request_id after a drop is one run, not two', async () => {
  const request = { input: 'hello there', user_id: 'node-retry', request_id: 'node-req-1' };
  const dropped = agent.Run(request, { deadline: deadline() });
  dropped.on('error', () => {}); // CANCELLED, as asked
  dropped.cancel(); // the connection is gone before the first event

  const events = await runEvents(request);
  assert.equal(events.at(-1).event, 'final');
  assert.equal(events[0].sequence, '1');
  const { threads } = await unary('ListThreads', { user_id: 'node-retry' });
  assert.equal(threads.length, 1);
  assert.equal(threads[0].latest_run_id, events[0].run_id);
  const { runs } = await unary('ListRuns', { thread_id: threads[0].thread_id, user_id: 'node-retry' });
  assert.deepEqual(runs.map((r) => [r.run_id, r.request_id]), [[events[0].run_id, 'node-req-1']]);
  const thread = await unary('GetThread', { thread_id: threads[0].thread_id, user_id: 'node-retry' });
  assert.deepEqual(thread.messages.map((m) => m.content), ['hello there', events.at(-1).final.final_reply]);

  const again = await unary('Invoke', { input: 'ignored', user_id: 'node-retry', request_id: 'node-req-1' });
  assert.equal(again.run_id, events[0].run_id);
});

#!/usr/bin/env node
// Time ONNX Runtime's forward pass on a model, one thread, for comparison
// with edgefit's executor on the same file (scripts/bench-vs-onnxruntime.sh).
//
// usage: node scripts/bench-onnxruntime.js MODEL.onnx [--batch N]
//        [--runs N] [--rounds N]
// Needs the npm package onnxruntime-node (npm install onnxruntime-node
// --ignore-scripts: the package carries its Linux x64 library, the install
// script only fetches optional GPU parts). Prints one JSON line:
// {"model":..., "batch":..., "median_ms":..., "min_ms":..., "runs":...}
'use strict';

const path = require('path');

function parseArgs(argv) {
  const o = { batch: 1, runs: 200, rounds: 7 };
  const rest = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--batch' || a === '--runs' || a === '--rounds') {
      const v = Number(argv[++i]);
      if (!Number.isInteger(v) || v < 1) {
        throw new Error(`${a} needs a whole number >= 1, got ${argv[i]}`);
      }
      o[a.slice(2)] = v;
    } else {
      rest.push(a);
    }
  }
  if (rest.length !== 1) {
    throw new Error('usage: bench-onnxruntime.js MODEL.onnx [--batch N] ' +
                    '[--runs N] [--rounds N]');
  }
  o.model = rest[0];
  return o;
}

function median(v) {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  let ort;
  try {
    ort = require('onnxruntime-node');
  } catch (e) {
    throw new Error('onnxruntime-node is not installed (npm install ' +
                    'onnxruntime-node --ignore-scripts, then set NODE_PATH ' +
                    'to its node_modules)');
  }
  const session = await ort.InferenceSession.create(o.model, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const feeds = {};
  for (const name of session.inputNames) {
    const meta = session.inputMetadata.find((m) => m.name === name);
    const dims = meta.shape.map((d, i) =>
      typeof d === 'number' && d > 0 ? d : (i === 0 ? o.batch : 1));
    const n = dims.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    // a fixed, non-trivial input: the time of a dense model does not depend
    // on the values, and zeros could take shortcuts
    for (let i = 0; i < n; i++) {
      data[i] = Math.sin(i * 0.37) * 0.5;
    }
    feeds[name] = new ort.Tensor('float32', data, dims);
  }
  for (let i = 0; i < 20; i++) {
    await session.run(feeds);
  }
  const perRound = [];
  for (let r = 0; r < o.rounds; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < o.runs; i++) {
      await session.run(feeds);
    }
    const t1 = process.hrtime.bigint();
    perRound.push(Number(t1 - t0) / 1e6 / o.runs);
  }
  process.stdout.write(JSON.stringify({
    model: path.basename(path.dirname(path.resolve(o.model))) + '/' +
           path.basename(o.model),
    runtime: 'onnxruntime-node ' + (ort.env.versions ? ort.env.versions.common : ''),
    batch: o.batch,
    median_ms: Number(median(perRound).toFixed(5)),
    min_ms: Number(Math.min(...perRound).toFixed(5)),
    runs: o.runs * o.rounds,
  }) + '\n');
}

main().catch((e) => {
  process.stderr.write(`bench-onnxruntime: ${e.message}\n`);
  process.exit(2);
});

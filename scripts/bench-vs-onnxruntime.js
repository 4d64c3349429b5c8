#!/usr/bin/env node
// edgefit's forward pass against ONNX Runtime's, side by side in one run,
// on the same ONNX files, batch 1, one thread, fp32.
//
// usage: NODE_PATH=DIR/node_modules node scripts/bench-vs-onnxruntime.js
//          [--build DIR] [--rounds N] MODEL.onnx...
// Each round times ONNX Runtime in this process (median over its runs) and
// then edgefit-layerwise on the same file (its measured forward pass,
// hardware_summary's latency_ms); rounds alternate so that a machine whose
// speed drifts slows both alike. Prints, per model, both medians over the
// rounds and edgefit's time as a multiple of ONNX Runtime's (below 1:
// edgefit is faster), and layerwise's host prediction error.
'use strict';

const { execFileSync } = require('child_process');
const path = require('path');

function median(v) {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function ortMedian(ort, session, runs) {
  const feeds = {};
  for (const name of session.inputNames) {
    const meta = session.inputMetadata.find((m) => m.name === name);
    const dims = meta.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
    const n = dims.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      data[i] = Math.sin(i * 0.37) * 0.5;
    }
    feeds[name] = new ort.Tensor('float32', data, dims);
  }
  const t = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    t.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return median(t);
}

function edgefit(build, model, repeats) {
  const out = execFileSync(path.join(build, 'apps/layerwise/edgefit-layerwise'),
    ['--model', model, '--batch', '1', '--precision', 'fp32', '--format',
     'json', '--quiet', '--repeats', String(repeats)],
    { encoding: 'utf8', maxBuffer: 64 << 20 });
  const s = JSON.parse(out).hardware_summary[0];
  return { ms: s.latency_ms, err: s.host_prediction_error };
}

async function main() {
  const args = process.argv.slice(2);
  let build = 'build';
  let rounds = 5;
  const models = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--build') {
      build = args[++i];
    } else if (args[i] === '--rounds') {
      rounds = Number(args[++i]);
    } else {
      models.push(args[i]);
    }
  }
  if (!models.length || !(rounds >= 1)) {
    throw new Error('usage: bench-vs-onnxruntime.js [--build DIR] ' +
                    '[--rounds N] MODEL.onnx...');
  }
  const ort = require('onnxruntime-node');
  console.log('model                 onnxruntime_ms  edgefit_ms  ratio  ' +
              'host_prediction_error');
  for (const model of models) {
    const session = await ort.InferenceSession.create(model, {
      intraOpNumThreads: 1, interOpNumThreads: 1,
      executionMode: 'sequential', graphOptimizationLevel: 'all',
    });
    await ortMedian(ort, session, 50); // warm-up
    const o = [], e = [], err = [];
    for (let r = 0; r < rounds; r++) {
      o.push(await ortMedian(ort, session, 300));
      const x = edgefit(build, model, 31);
      e.push(x.ms);
      err.push(x.err);
    }
    const name = path.basename(path.dirname(path.resolve(model)));
    const mo = median(o), me = median(e);
    console.log(`${name.padEnd(22)}${mo.toFixed(4).padStart(14)}` +
                `${me.toFixed(4).padStart(12)}${(me / mo).toFixed(2).padStart(7)}` +
                `${(median(err) * 100).toFixed(0).padStart(10)}%`);
  }
}

main().catch((e) => {
  process.stderr.write(`bench-vs-onnxruntime: ${e.message}\n`);
  process.exit(2);
});

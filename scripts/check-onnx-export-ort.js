#!/usr/bin/env node
// Models written by memest_model_to_onnx(), run by ONNX Runtime, against
// edgefit's own outputs on the same inputs. A check, not a CI test: ONNX
// Runtime is never a build or test dependency.
//
// usage: node scripts/check-onnx-export-ort.js [--qdq] [MODEL...]
//   MODEL: a preset, a text description or an ONNX file (default: the
//   presets, tests/data/export and every model of tests/data/zoo).
// Environment: BUILD (default build), the build folder with
// tests/profile/onnx-export-dump; ORT_PREFIX (default /tmp/edgefit-ort),
// where npm installed onnxruntime-node (scripts/bench-vs-onnxruntime-c.sh
// installs it). For each model it prints the largest absolute and relative
// difference over the outputs, the share of elements within 1e-5 relative
// (1e-6 absolute), whether every sample's argmax agrees and, for an ONNX
// model, how far ONNX Runtime's outputs on the original file are from its
// outputs on the export and from edgefit's (the export's own part, and the
// two runtimes' float orders). It exits 1 when a model fails to load or run
// in ONNX Runtime, or when an output differs from edgefit's by more than
// 1e-4 times the largest output magnitude (at least 1). With --qdq each
// model is calibrated and written as QDQ (onnx-export-dump --qdq) and
// compared with edgefit's fp32 outputs (the quantisation's error) and with
// edgefit's static int8 outputs on the same params (share of elements
// equal, within one step of the output's scale, the largest difference
// in steps); only a file ONNX Runtime cannot load or run fails.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');

const root = path.resolve(__dirname, '..');
const build = path.resolve(root, process.env.BUILD || 'build');
const prefix = process.env.ORT_PREFIX || path.join(os.tmpdir(), 'edgefit-ort');
const ort = require(path.join(prefix, 'node_modules', 'onnxruntime-node'));
const dump = path.join(build, 'tests', 'profile', 'onnx-export-dump');

function defaultModels() {
  const list = ['mlp:784-64-10', 'smallcnn', 'resnet8', 'ds-cnn',
    'mobilenetv1-0.25', 'fc-autoencoder', 'kwt', 'lstm-kws',
    path.join(root, 'tests', 'data', 'export', 'every-kind.txt'),
    path.join(root, 'tests', 'data', 'export', 'every-seq-kind.txt'),
    path.join(root, 'tests', 'data', 'export', 'gelu-tanh.txt')];
  const zoo = path.join(root, 'tests', 'data', 'zoo');
  for (const d of fs.readdirSync(zoo).sort()) {
    for (const f of ['model.onnx', 'model.txt']) {
      const p = path.join(zoo, d, f);
      if (fs.existsSync(p)) list.push(p);
    }
  }
  return list;
}

function readFloats(file) {
  const b = fs.readFileSync(file);
  return new Float32Array(b.buffer, b.byteOffset, b.length / 4);
}

async function check(model) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'onnx-export-'));
  try {
    execFileSync(dump, (qdq ? ['--qdq'] : []).concat([model, dir]), { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    return { model, error: 'export: ' + String(e.stderr || e.message).trim() };
  }
  const meta = JSON.parse(fs.readFileSync(path.join(dir, 'meta.json'), 'utf8'));
  let session;
  try {
    session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'),
      { intraOpNumThreads: 1, graphOptimizationLevel: 'all' });
  } catch (e) {
    return { model, error: 'ONNX Runtime refuses the file: ' + e.message };
  }
  const feeds = {};
  meta.inputs.forEach((inp, k) => {
    feeds[inp.name] = new ort.Tensor('float32',
      readFloats(path.join(dir, `input_${k}.bin`)), inp.shape);
  });
  let res;
  try {
    res = await session.run(feeds);
  } catch (e) {
    return { model, error: 'ONNX Runtime fails to run it: ' + e.message };
  }
  const got = res[session.outputNames[0]].data;
  const want = readFloats(path.join(dir, 'output.bin'));
  // QDQ: ONNX Runtime's int8 against edgefit's static int8, in steps of
  // the output tensor's scale
  let steps = '';
  if (qdq) {
    const i8 = readFloats(path.join(dir, 'output_int8.bin'));
    let eq = 0, within = 0, worst = 0;
    for (let i = 0; i < got.length; i++) {
      const st = Math.abs(got[i] - i8[i]) / meta.output_scale;
      if (got[i] === i8[i]) eq++;
      if (st <= 1.0001) within++;
      worst = Math.max(worst, st);
    }
    steps = `${(eq / got.length).toFixed(4)},${(within / got.length).toFixed(4)},${worst.toFixed(2)}`;
  }
  fs.rmSync(dir, { recursive: true });
  if (got.length !== want.length) {
    return { model, error: `${got.length} outputs from ONNX Runtime, ${want.length} from edgefit` };
  }
  let maxAbs = 0, maxRel = 0, close = 0, mag = 1;
  const ops = new Set();
  for (let i = 0; i < got.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    const rel = d / Math.max(Math.abs(want[i]), 1e-6);
    maxAbs = Math.max(maxAbs, d);
    mag = Math.max(mag, Math.abs(want[i]));
    if (d > 1e-6) maxRel = Math.max(maxRel, rel);
    if (d <= 1e-6 || rel <= 1e-5) close++;
  }
  const batch = meta.output_shape[0];
  const per = got.length / batch;
  let argmax = true;
  for (let n = 0; n < batch && per > 1; n++) {
    let a = 0, b = 0;
    for (let i = 1; i < per; i++) {
      if (got[n * per + i] > got[n * per + a]) a = i;
      if (want[n * per + i] > want[n * per + b]) b = i;
    }
    argmax = argmax && a === b;
  }
  // an ONNX model: its own file in ONNX Runtime against the export, which
  // tells the export's part from the two runtimes' float orders
  let orig = '';
  if (model.endsWith('.onnx') && !qdq) {
    const s0 = await ort.InferenceSession.create(model,
      { intraOpNumThreads: 1, graphOptimizationLevel: 'all' });
    let r0;
    try {
      r0 = await s0.run(feeds);
    } catch (e) {
      // a 1-D signal N x C x L is held (and written) as N x C x 1 x L
      return { model, elements: got.length, maxAbs, maxRel,
        close: close / got.length, argmax, orig: 'n/a (input rank),n/a', mag, steps };
    }
    const o0 = r0[s0.outputNames[0]].data;
    let m0 = 0;
    for (let i = 0; i < o0.length; i++) m0 = Math.max(m0, Math.abs(o0[i] - got[i]));
    let e0 = 0;
    for (let i = 0; i < o0.length; i++) e0 = Math.max(e0, Math.abs(o0[i] - want[i]));
    orig = `${m0.toExponential(2)},${e0.toExponential(2)}`;
  }
  return { model, elements: got.length, maxAbs, maxRel,
    close: close / got.length, argmax, orig, mag, steps };
}

const args = process.argv.slice(2);
const qdq = args[0] === '--qdq';
if (qdq) args.shift();

(async () => {
  const models = args.length > 0 ? args : defaultModels();
  let bad = 0;
  console.log(qdq
    ? 'model,elements,max_abs_diff_vs_fp32,max_rel_diff_vs_fp32,share_within_1e-5,' +
      'argmax_agrees_with_fp32,share_equal_to_edgefit_int8,' +
      'share_within_1_step_of_edgefit_int8,max_diff_steps'
    : 'model,elements,max_abs_diff,max_rel_diff,share_within_1e-5,argmax_agrees,' +
      'ort_file_vs_ort_export_max_abs_diff,ort_file_vs_edgefit_max_abs_diff');
  for (const m of models) {
    const r = await check(m);
    const name = path.relative(root, path.resolve(m)).startsWith('..') ||
      !fs.existsSync(m) ? m : path.relative(root, path.resolve(m));
    if (r.error) {
      console.log(`${name},ERROR: ${r.error.replace(/\s+/g, ' ')}`);
      bad++;
      continue;
    }
    console.log(`${name},${r.elements},${r.maxAbs.toExponential(2)},` +
      `${r.maxRel.toExponential(2)},${r.close.toFixed(4)},${r.argmax ? 'yes' : 'no'},` +
      (qdq ? r.steps : r.orig));
    if (!qdq && r.maxAbs > 1e-4 * r.mag) bad++;
  }
  process.exit(bad ? 1 : 0);
})();

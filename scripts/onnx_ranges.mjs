// Min-max ranges of every activation of a model qdq_onnx.py augmented,
// run by ONNX Runtime (onnxruntime-node) on SAMPLES inputs of batch 1
// drawn uniformly from [-1, 1] by a fixed xorshift generator (the same
// numbers on every run), as ONNX Runtime's MinMax calibrator collects them.
//
//   node onnx_ranges.mjs ORT_NODE_MODULE AUG.onnx META.json OUT.json [SAMPLES]
import { createRequire } from 'module';
import { readFileSync, writeFileSync } from 'fs';

const [mod, aug, metaPath, outPath, samplesArg] = process.argv.slice(2);
if (!outPath) {
    console.error('usage: node onnx_ranges.mjs ORT_NODE_MODULE AUG.onnx META.json OUT.json [SAMPLES]');
    process.exit(2);
}
const ort = createRequire(import.meta.url)(mod);
const meta = JSON.parse(readFileSync(metaPath, 'utf8'));
const samples = samplesArg ? parseInt(samplesArg, 10) : 32;
const session = await ort.InferenceSession.create(aug);
const n = meta.shape.reduce((a, b) => a * b, 1);
let s = 2463534242 >>> 0;
const next = () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s / 4294967296;
};
const ranges = {};
const note = (name, data) => {
    let lo = Infinity, hi = -Infinity;
    for (const v of data) {
        if (v < lo) lo = v;
        if (v > hi) hi = v;
    }
    const r = ranges[name];
    ranges[name] = r ? [Math.min(r[0], lo), Math.max(r[1], hi)] : [lo, hi];
};
for (let k = 0; k < samples; k++) {
    const x = new Float32Array(n);
    for (let i = 0; i < n; i++) x[i] = 2 * next() - 1;
    const feeds = { [meta.input]: new ort.Tensor('float32', x, meta.shape) };
    const out = await session.run(feeds);
    note(meta.input, x);
    for (const name of meta.tensors.slice(1)) {
        if (!out[name]) throw new Error(`no output ${name}`);
        note(name, out[name].data);
    }
}
writeFileSync(outPath, JSON.stringify(ranges));

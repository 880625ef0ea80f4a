// Runs one ONNX model with ONNX Runtime (npm onnxruntime-node, CPU) on the
// inputs that bench/models.py wrote, for bench/check.py and bench/bench.py.
//
// Usage: node ort_run.js MODEL.onnx CASE_DIR OUT_DIR [--threads N]
//            [--parallel] [--runs N] [--profile PREFIX]
//
// CASE_DIR/inputs.json lists the inputs ({name, dtype, dims, file}) whose
// raw little-endian data lies in CASE_DIR/<file>. Writes OUT_DIR/output_N.bin
// and OUT_DIR/outputs.json in the same form. With --runs N, times N runs
// after one warm-up and prints {"median_ms": ..., "runs": N} last. With
// --profile PREFIX, ONNX Runtime's profiler records every node of every run
// into PREFIX_<date>.json (bench/layers.py reads it).
"use strict";
const fs = require("fs");
const path = require("path");
const ort = require("onnxruntime-node");

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int64: BigInt64Array,
  int32: Int32Array, int8: Int8Array, uint8: Uint8Array, bool: Uint8Array,
};

function parseArgs(argv) {
  const args = { threads: 0, parallel: false, runs: 0, profile: "", positional: [] };
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === "--threads") args.threads = Number(argv[++i]);
    else if (argv[i] === "--parallel") args.parallel = true;
    else if (argv[i] === "--runs") args.runs = Number(argv[++i]);
    else if (argv[i] === "--profile") args.profile = argv[++i];
    else args.positional.push(argv[i]);
  }
  if (args.positional.length !== 3) {
    console.error("usage: node ort_run.js MODEL.onnx CASE_DIR OUT_DIR [--threads N] [--parallel] [--runs N] [--profile PREFIX]");
    process.exit(2);
  }
  return args;
}

function readInputs(caseDir) {
  const feeds = {};
  for (const input of JSON.parse(fs.readFileSync(path.join(caseDir, "inputs.json")))) {
    const bytes = fs.readFileSync(path.join(caseDir, input.file));
    const Array = ARRAYS[input.dtype];
    if (!Array) throw new Error(`input ${input.name}: unsupported dtype ${input.dtype}`);
    const data = new Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
    feeds[input.name] = new ort.Tensor(input.dtype, input.dtype === "bool" ? Uint8Array.from(data) : data, input.dims);
  }
  return feeds;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const [model, caseDir, outDir] = args.positional;
  const options = {
    executionMode: args.parallel ? "parallel" : "sequential",
    graphOptimizationLevel: "all",
  };
  if (args.threads > 0) {
    options.intraOpNumThreads = args.threads;
    options.interOpNumThreads = args.parallel ? args.threads : 1;
  }
  if (args.profile) {
    options.enableProfiling = true;
    options.profileFilePrefix = args.profile;
  }
  const session = await ort.InferenceSession.create(model, options);
  const feeds = readInputs(caseDir);
  const results = await session.run(feeds);
  fs.mkdirSync(outDir, { recursive: true });
  const manifest = session.outputNames.map((name, i) => {
    const tensor = results[name];
    const file = `output_${i}.bin`;
    const data = tensor.data;
    fs.writeFileSync(path.join(outDir, file), Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    return { name, dtype: tensor.type, dims: tensor.dims, file };
  });
  fs.writeFileSync(path.join(outDir, "outputs.json"), JSON.stringify(manifest, null, 1));
  if (args.runs > 0) {
    const times = [];
    for (let r = 0; r < args.runs; ++r) {
      const start = process.hrtime.bigint();
      await session.run(feeds);
      times.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    times.sort((a, b) => a - b);
    console.log(JSON.stringify({ median_ms: times[Math.floor(times.length / 2)], runs: args.runs }));
  }
  if (args.profile) session.endProfiling();
}

main().catch((error) => {
  console.error(`ort_run.js: ${error.message}`);
  process.exit(1);
});

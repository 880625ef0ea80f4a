// Runs one ONNX model with ONNX Runtime (npm onnxruntime-node, CPU) on many
// inputs, loading it once: bench/quant_eval.py's reference runs and timings.
//
// Usage: node ort_eval.js MODEL.onnx [--threads N]
//
// Prints {"ready": true, "inputs": [...], "outputs": [...]} once the session
// is made, then answers requests read from stdin, one JSON object a line,
// with one JSON line each on stdout:
//
//   {"cmd": "eval", "input": {"name", "dtype", "dims", "file"}, "count": N,
//    "output_dir": DIR}
//       FILE holds N tensors of dims one after another (raw little-endian,
//       or more: the first N are run); runs each and writes DIR/output_K.bin, the N results of output K
//       one after another. Answers {"outputs": [{"name", "dtype", "dims",
//       "file"}], "count": N, "seconds": S} (dims: one run's).
//   {"cmd": "time", "input": {...}, "index": I, "runs": R, "warmup": W}
//       W untimed runs and R timed runs of tensor I of FILE. Answers
//       {"times_ms": [...]}.
//   {"cmd": "quit"}
//
// A failed request answers {"error": "..."} and the script goes on.
"use strict";
const fs = require("fs");
const path = require("path");
const readline = require("readline");
const ort = require("onnxruntime-node");

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int64: BigInt64Array,
  int32: Int32Array, int8: Int8Array, uint8: Uint8Array,
};

function parseArgs(argv) {
  const args = { threads: 0, positional: [] };
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === "--threads") args.threads = Number(argv[++i]);
    else args.positional.push(argv[i]);
  }
  if (args.positional.length !== 1) {
    console.error("usage: node ort_eval.js MODEL.onnx [--threads N]  (requests on stdin)");
    process.exit(2);
  }
  return args;
}

// Tensors first .. first + count - 1 of one input file, as views into one
// buffer.
function readTensors(input, count, first = 0) {
  const Array = ARRAYS[input.dtype];
  if (!Array) throw new Error(`input ${input.name}: unsupported dtype ${input.dtype}`);
  const bytes = fs.readFileSync(input.file);
  const elements = input.dims.reduce((a, b) => a * b, 1);
  const size = elements * Array.BYTES_PER_ELEMENT;
  if (bytes.length % size !== 0 || bytes.length < size * (first + count)) {
    throw new Error(`${input.file}: ${bytes.length} bytes, not ${first + count} or more tensors of ${size}`);
  }
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
  const tensors = [];
  for (let i = first; i < first + count; ++i) {
    tensors.push(new ort.Tensor(input.dtype, new Array(buffer, i * size, elements), input.dims));
  }
  return tensors;
}

async function evaluate(session, request) {
  const start = process.hrtime.bigint();
  const tensors = readTensors(request.input, request.count);
  fs.mkdirSync(request.output_dir, { recursive: true });
  const files = session.outputNames.map((_, k) =>
    fs.openSync(path.join(request.output_dir, `output_${k}.bin`), "w"));
  let manifest = null;
  for (const tensor of tensors) {
    const results = await session.run({ [request.input.name]: tensor });
    manifest = session.outputNames.map((name, k) => {
      const data = results[name].data;
      fs.writeSync(files[k], Buffer.from(data.buffer, data.byteOffset, data.byteLength));
      return { name, dtype: results[name].type, dims: results[name].dims,
               file: path.join(request.output_dir, `output_${k}.bin`) };
    });
  }
  files.forEach((fd) => fs.closeSync(fd));
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return { outputs: manifest, count: request.count, seconds };
}

async function time(session, request) {
  const tensor = readTensors(request.input, 1, request.index ?? 0)[0];
  const feeds = { [request.input.name]: tensor };
  for (let r = 0; r < (request.warmup ?? 1); ++r) await session.run(feeds);
  const times = [];
  for (let r = 0; r < request.runs; ++r) {
    const start = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return { times_ms: times };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const options = { executionMode: "sequential", graphOptimizationLevel: "all" };
  if (args.threads > 0) {
    options.intraOpNumThreads = args.threads;
    options.interOpNumThreads = 1;
  }
  const session = await ort.InferenceSession.create(args.positional[0], options);
  const reply = (object) => process.stdout.write(JSON.stringify(object) + "\n");
  reply({ ready: true, inputs: session.inputNames, outputs: session.outputNames });
  const lines = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const line of lines) {
    if (!line.trim()) continue;
    try {
      const request = JSON.parse(line);
      if (request.cmd === "quit") break;
      else if (request.cmd === "eval") reply(await evaluate(session, request));
      else if (request.cmd === "time") reply(await time(session, request));
      else reply({ error: `unknown cmd ${request.cmd}` });
    } catch (error) {
      reply({ error: error.message });
    }
  }
  lines.close();
}

main().catch((error) => {
  console.error(`ort_eval.js: ${error.message}`);
  process.exit(1);
});

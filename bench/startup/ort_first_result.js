// ONNX Runtime's side of bench/startup/startup.py: time from process start
// to the first result (node, npm onnxruntime-node, CPU, sequential, all
// graph optimisations). CGC_LAUNCH_NS holds the launcher's CLOCK_REALTIME
// in ns, taken just before it starts node. Prints the same JSON line as
// first_result.cpp.
//
// Usage: CGC_LAUNCH_NS=... node ort_first_result.js MODEL.onnx DIMS [THREADS]
//   DIMS: the float32 input's shape, e.g. 1x3x224x224 (the input is zeros)
"use strict";
const launchMs = Number(BigInt(process.env.CGC_LAUNCH_NS || "0") / 1000n) / 1000;
const since = () => performance.timeOrigin + performance.now() - launchMs;
const atMain = since();
const path = require("path");
const ort = require(path.join(__dirname, "..", "node_modules", "onnxruntime-node"));

async function main() {
  const [model, dims, threads] = process.argv.slice(2);
  if (!model || !dims || !process.env.CGC_LAUNCH_NS) {
    console.error("usage: CGC_LAUNCH_NS=... node ort_first_result.js MODEL.onnx DIMS [THREADS]");
    process.exit(2);
  }
  const options = { executionMode: "sequential", graphOptimizationLevel: "all" };
  if (threads) {
    options.intraOpNumThreads = Number(threads);
    options.interOpNumThreads = 1;
  }
  const session = await ort.InferenceSession.create(model, options);
  const constructed = since();
  const shape = dims.split("x").map(Number);
  const input = new ort.Tensor("float32", new Float32Array(shape.reduce((a, b) => a * b, 1)), shape);
  await session.run({ [session.inputNames[0]]: input });
  const firstResult = since();
  const before = performance.now();
  await session.run({ [session.inputNames[0]]: input });
  const secondRun = performance.now() - before;
  console.log(JSON.stringify({ main_ms: atMain, constructed_ms: constructed,
                               first_result_ms: firstResult, second_run_ms: secondRun }));
}
main().catch((e) => { console.error(e.message); process.exit(1); });

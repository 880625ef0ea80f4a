// See cost_model.h.
#include "planning/cost_model.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "lowering/kernel_call.h"

namespace cgc::passes {
namespace {

// One-core roofline: a rate a little under what LIBXSMM's JIT SGEMM reaches
// on one core (bench/peak.cpp measures the FMA peak), since real
// convolutions and small GEMMs do not run at peak, and one core's streaming
// bandwidth from L3/DRAM. Both only need to rank nodes, not predict them.
constexpr double kFlopsPerMicro = 50e9 / 1e6;
constexpr double kBytesPerMicro = 20e9 / 1e6;
// Call, parameter set-up and the team barrier after each node.
constexpr double kOverheadMicros = 0.3;

double product(const ir::Shape& shape) {
  double n = 1;
  for (int64_t d : shape) n *= static_cast<double>(d);
  return n;
}

double flopsOf(const ir::Graph& graph, const ir::Node& node, const lowering::KernelCall& call) {
  using lowering::Kernel;
  switch (call.kernel) {
    case Kernel::kConv: {
      const auto& p = std::get<rt::ConvParams>(call.params);
      return 2.0 * p.n * p.c_out * p.d_out * p.h_out * p.w_out * (p.c_in / p.groups) * p.k_d *
             p.k_h * p.k_w;
    }
    case Kernel::kConvTranspose: {  // every input pixel scatters a kernel
      const auto& p = std::get<rt::ConvParams>(call.params);
      return 2.0 * p.n * p.c_in * p.d_in * p.h_in * p.w_in * (p.c_out / p.groups) * p.k_d * p.k_h *
             p.k_w;
    }
    case Kernel::kGemm: {
      const auto& p = std::get<rt::GemmParams>(call.params);
      return 2.0 * p.m * p.n * p.k;
    }
    case Kernel::kMatMul: {
      const auto& p = std::get<rt::MatMulParams>(call.params);
      double batch = 1;
      for (int d = 0; d < p.batch_rank; ++d) batch *= p.batch_shape[d];
      return 2.0 * batch * p.m * p.n * p.k;
    }
    case Kernel::kMatMulNarrow: {
      const auto& p = std::get<rt::NarrowMatMulParams>(call.params);
      return 2.0 * p.m * p.n * p.k;
    }
    case Kernel::kAttention: {
      const auto& p = std::get<rt::AttentionParams>(call.params);
      return 2.0 * p.batch * p.heads * p.rows * p.keys * (p.depth + p.depth_v);
    }
    case Kernel::kRnn: {
      const auto& p = std::get<rt::RnnParams>(call.params);
      double gates = p.cell == rt::RnnCell::kLstm ? 4 : p.cell == rt::RnnCell::kGru ? 3 : 1;
      // Input and recurrent MMs per step, plus ~10 ops per gate element.
      double perStep = 2.0 * p.batch * gates * p.hidden_size * (p.input_size + p.hidden_size) +
                       10.0 * p.batch * gates * p.hidden_size;
      return perStep * p.seq_length * p.num_directions;
    }
    case Kernel::kMaxPool:
    case Kernel::kAvgPool: {
      const auto& p = std::get<rt::PoolParams>(call.params);
      return product(graph.value(node.outputs[0]).type.shape) * p.k_d * p.k_h * p.k_w;
    }
    default: {  // elementwise-like: one op per element of the largest tensor
      double elements = 0;
      for (int v : node.inputs)
        if (v >= 0) elements = std::max(elements, product(graph.value(v).type.shape));
      for (int v : node.outputs)
        if (v >= 0) elements = std::max(elements, product(graph.value(v).type.shape));
      return elements;
    }
  }
}

double bytesOf(const ir::Graph& graph, const ir::Node& node) {
  double bytes = 0;
  for (int v : node.inputs)
    if (v >= 0) bytes += static_cast<double>(graph.value(v).type.bytes());
  for (int v : node.outputs)
    if (v >= 0) bytes += static_cast<double>(graph.value(v).type.bytes());
  return bytes;
}

double estimateNode(const ir::Graph& graph, const ir::Node& node,
                    const lowering::KernelCall& call) {
  if (call.kernel == lowering::Kernel::kView) return 0.0;
  const double flops = flopsOf(graph, node, call);
  return std::max(flops / kFlopsPerMicro, bytesOf(graph, node) / kBytesPerMicro) + kOverheadMicros;
}

std::string describeOutputs(const ir::Graph& graph, const ir::Node& node) {
  std::vector<std::string> parts;
  for (int v : node.outputs)
    if (v >= 0)
      parts.push_back(fmt::format("{} {}", graph.value(v).name, graph.value(v).type.str()));
  return fmt::format("{}", fmt::join(parts, ", "));
}

[[noreturn]] void profileError(const std::string& path, const std::string& what) {
  userError(DiagLocation{path, "", ""}, "{}", what);
}

}  // namespace

double parallelSpeedup(int threads) {
  return threads <= 1 ? 1.0 : std::pow(static_cast<double>(threads), 0.8);
}

CostModel estimateCosts(const ir::Graph& graph, const lowering::KernelCalls& calls) {
  CostModel costs;
  costs.micros.assign(graph.numNodeSlots(), 0.0);
  costs.threads.assign(graph.numNodeSlots(), 0);
  for (int id : graph.liveNodes())
    costs.micros[id] = estimateNode(graph, graph.node(id), calls.of(id));
  return costs;
}

std::string graphHash(const ir::Graph& graph) {
  // Same text codegen hashed over its one-executor order (which was the
  // topological order), so profiles written before stay valid.
  std::string description;
  for (int id : graph.topologicalOrder()) {
    const ir::Node& node = graph.node(id);
    description += fmt::format("{}|{}|{}\n", node.name, node.op, describeOutputs(graph, node));
  }
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : description) hash = (hash ^ c) * 1099511628211ull;
  return fmt::format("{:016x}", hash);
}

CostModel costsFromProfile(const ir::Graph& graph, const lowering::KernelCalls& calls,
                           const std::string& path) {
  std::ifstream file(path);
  if (!file) profileError(path, "cannot read the profile");
  nlohmann::json profile;
  try {
    profile = nlohmann::json::parse(file);
  } catch (const nlohmann::json::exception& e) {
    profileError(path, fmt::format("not a valid profile: {}", e.what()));
  }
  return costsFromProfile(graph, calls, profile, path);
}

CostModel costsFromProfile(const ir::Graph& graph, const lowering::KernelCalls& calls,
                           const nlohmann::json& profile, const std::string& path) {
  if (!profile.is_object() || !profile.contains("graph_hash") ||
      !profile["graph_hash"].is_string() || !profile.contains("nodes") ||
      !profile["nodes"].is_array())
    profileError(path, "not a cgc profile (needs \"graph_hash\" and \"nodes\")");
  const std::string measuredOn = profile["graph_hash"].get<std::string>();
  std::string ours = graphHash(graph);
  if (measuredOn != ours)
    profileError(
        path, fmt::format("profile {} was measured on a different graph (hash {}, this model has "
                          "{}); re-run cgc run --profile-out or cgc tune",
                          path, measuredOn, ours));

  std::map<std::string, int> byName;
  for (int id : graph.liveNodes()) byName[graph.node(id).name] = id;
  CostModel estimate = estimateCosts(graph, calls);
  CostModel costs = estimate;
  std::vector<bool> present(graph.numNodeSlots(), false);
  for (const auto& entry : profile.at("nodes")) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
        !entry.contains("median_us") || !entry["median_us"].is_number())
      profileError(path, "every node needs a \"name\" and a numeric \"median_us\"");
    auto it = byName.find(entry["name"].get<std::string>());
    if (it == byName.end()) continue;  // "?" or a node since folded away
    int threads = entry.contains("threads") && entry["threads"].is_number_integer()
                      ? std::max(1, entry["threads"].get<int>())
                      : 1;
    costs.micros[it->second] =
        std::max(0.0, entry["median_us"].get<double>()) * parallelSpeedup(threads);
    costs.threads[it->second] = threads;
    present[it->second] = true;
    costs.measured = true;
  }
  // Missing nodes: the estimate, in the profile's units (the median ratio of
  // measured to estimated over the nodes the profile has).
  std::vector<double> ratios;
  for (int id : graph.liveNodes())
    if (present[id] && estimate.micros[id] > 0)
      ratios.push_back(costs.micros[id] / estimate.micros[id]);
  double scale = 1.0;
  if (!ratios.empty()) {
    std::nth_element(ratios.begin(), ratios.begin() + ratios.size() / 2, ratios.end());
    scale = ratios[ratios.size() / 2];
  }
  for (int id : graph.liveNodes())
    if (!present[id]) costs.micros[id] = estimate.micros[id] * scale;
  return costs;
}

}  // namespace cgc::passes

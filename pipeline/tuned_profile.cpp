// See tuned_profile.h.
#include "pipeline/tuned_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cgc/runtime.h"
#include "ir/diagnostics.h"
#include "pipeline/specializations.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace cgc::driver {

std::string CpuRecord::str() const {
  return fmt::format("{} family {} model {}", vendor, family, model);
}

CpuRecord thisCpu() {
  CpuRecord cpu;
  cpu.tier = runtime_isa_tier();
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d)) {
    char vendor[13] = {};
    for (int i = 0; i < 4; ++i) {
      vendor[i] = static_cast<char>(b >> (8 * i));
      vendor[4 + i] = static_cast<char>(d >> (8 * i));
      vendor[8 + i] = static_cast<char>(c >> (8 * i));
    }
    cpu.vendor = vendor;
  }
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    // The displayed family and model (Intel SDM vol. 2, CPUID leaf 1).
    const int family = (a >> 8) & 0xf, model = (a >> 4) & 0xf;
    cpu.family = family == 0xf ? family + static_cast<int>((a >> 20) & 0xff) : family;
    cpu.model = family == 0x6 || family == 0xf ? model + static_cast<int>((a >> 12) & 0xf0) : model;
  }
#else
  // Linux on aarch64: the first core's MIDR fields.
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    const std::string value = line.substr(line.find_first_not_of(" \t", colon + 1));
    if (key == "CPU implementer" && cpu.vendor.empty()) cpu.vendor = value;
    if (key == "CPU architecture" && cpu.family == 0) cpu.family = std::stoi(value, nullptr, 0);
    if (key == "CPU part" && cpu.model == 0) cpu.model = std::stoi(value, nullptr, 0);
  }
#endif
  return cpu;
}

namespace {

/// A map of dimension names to sizes, or nullopt.
std::optional<std::map<std::string, int64_t>> sizesOf(const nlohmann::json& dims) {
  if (!dims.is_object()) return std::nullopt;
  std::map<std::string, int64_t> out;
  for (const auto& [name, size] : dims.items()) {
    if (!size.is_number_integer()) return std::nullopt;
    out[name] = size.get<int64_t>();
  }
  return out;
}

[[noreturn]] void badSpecializations(const std::string& path) {
  userError({path, "", ""},
            "\"specializations\" must list {{\"dims\": {{NAME: SIZE, ...}}, \"profile\": "
            "{{...}}}} objects");
}

}  // namespace

TunedConfig readTunedConfig(const std::string& path) {
  std::ifstream in(path);
  const nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return json.is_object() ? readTunedConfig(json, path) : TunedConfig{};
}

nlohmann::json specializationProfile(const std::string& path,
                                     const std::map<std::string, int64_t>& sizes) {
  std::ifstream in(path);
  const nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (json.is_object() && json.contains("specializations") && json["specializations"].is_array())
    for (const auto& entry : json["specializations"])
      if (entry.is_object() && entry.contains("dims") && sizesOf(entry["dims"]) == sizes &&
          entry.contains("profile") && entry["profile"].is_object())
        return entry["profile"];
  userError({path, "", ""}, "the profile has no tuning of the specialised path {}",
            describeSizes(sizes));
}

TunedConfig readTunedConfig(const nlohmann::json& json, const std::string& path) {
  TunedConfig config;
  config.executors = json.value("executors", 0);
  config.threads = json.value("threads", 0);
  if (json.contains("node_threads") && json["node_threads"].is_object())
    for (auto& [name, threads] : json["node_threads"].items())
      if (threads.is_number_integer()) config.nodeThreads[name] = threads.get<int>();
  if (json.contains("variants")) {
    const auto& variants = json["variants"];
    if (!variants.is_object())
      userError({path, "", ""}, "\"variants\" must map node names to convolution variants");
    for (auto& [name, variant] : variants.items()) {
      if (!variant.is_string())
        userError({path, "", ""}, "\"variants\": node '{}' needs a variant name", name);
      config.convVariants[name] = variant.get<std::string>();
    }
  }
  if (json.contains("float_layers")) {
    const auto& layers = json["float_layers"];
    if (!layers.is_array() ||
        !std::all_of(layers.begin(), layers.end(), [](const auto& l) { return l.is_string(); }))
      userError({path, "", ""}, "\"float_layers\" must list node names");
    for (const auto& layer : layers) config.floatLayers.insert(layer.get<std::string>());
  }
  if (json.contains("cpu")) {
    const auto& cpu = json["cpu"];
    if (!cpu.is_object() || !cpu.contains("vendor") || !cpu["vendor"].is_string() ||
        !cpu.contains("family") || !cpu["family"].is_number_integer() || !cpu.contains("model") ||
        !cpu["model"].is_number_integer())
      userError({path, "", ""},
                "\"cpu\" needs a \"vendor\" string and integer \"family\" and "
                "\"model\"");
    config.cpu = CpuRecord{cpu["vendor"].get<std::string>(), cpu["family"].get<int>(),
                           cpu["model"].get<int>(), cpu.value("tier", "")};
  }
  if (json.contains("sizes")) {
    const auto& sizes = json["sizes"];
    auto bad = [&] {
      userError({path, "", ""},
                "\"sizes\" must list {{\"dims\": {{NAME: SIZE, ...}}, \"runs\": N}} objects");
    };
    if (!sizes.is_array()) bad();
    for (const auto& entry : sizes) {
      if (!entry.is_object() || !entry.contains("dims") || !entry.contains("runs") ||
          !entry["runs"].is_number_integer() || !sizesOf(entry["dims"]))
        bad();
      config.sizes.emplace_back(*sizesOf(entry["dims"]), entry["runs"].get<int64_t>());
    }
    std::stable_sort(config.sizes.begin(), config.sizes.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
  }
  if (json.contains("specializations")) {
    const auto& paths = json["specializations"];
    if (!paths.is_array()) badSpecializations(path);
    for (const auto& entry : paths) {
      if (!entry.is_object() || !entry.contains("dims") || !sizesOf(entry["dims"]) ||
          !entry.contains("profile") || !entry["profile"].is_object())
        badSpecializations(path);
      config.specializations.push_back(*sizesOf(entry["dims"]));
    }
  }
  return config;
}

void checkMeasuredHere(const std::string& path, const TunedConfig& config, const Target& target) {
  if (!target.isNative() || !config.cpu) return;
  const CpuRecord here = thisCpu();
  if (!config.cpu->sameProcessor(here))
    userError({path, "", ""},
              "profile {} was measured on a different CPU ({}, this machine is {}); re-run cgc "
              "tune here, or compile for a named --target",
              path, config.cpu->str(), here.str());
}

}  // namespace cgc::driver

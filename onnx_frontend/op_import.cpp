// OpContext helpers shared by the op importers, and the importer table.
#include "onnx_frontend/op_import.h"

#include <cstring>

#include "onnx_frontend/tensor_proto.h"

namespace cgc::frontend {

DiagLocation OpContext::where() const { return {graph.sourceFile, nodeName, proto.op_type()}; }

void OpContext::fail(const std::string& message) const { userError(where(), "{}", message); }

const ir::Value& OpContext::input(size_t i) const {
  if (!hasInput(i)) fail(fmt::format("input {} is required", i));
  return graph.value(inputs[i]);
}

static void requireConstant(const OpContext& ctx, const ir::Value& v, const char* role) {
  if (!v.bytesKnown())
    ctx.fail(
        fmt::format("input '{}' ({}) must be a compile-time constant; it "
                    "depends on a graph input (bind one with --constant "
                    "NAME=FILE.pb)",
                    v.name, role));
}

std::vector<int64_t> OpContext::constantInts(size_t i, const char* role) const {
  requireConstant(*this, input(i), role);
  DType type = inputType(i);
  if (type == DType::kF32 || type == DType::kF64 || type == DType::kF16 || type == DType::kBF16)
    fail(fmt::format("input '{}' ({}) must be an integer tensor, is {}", input(i).name, role,
                     dtypeName(type)));
  return input(i).intValues();
}

std::vector<double> OpContext::constantDoubles(size_t i, const char* role) const {
  requireConstant(*this, input(i), role);
  return input(i).doubleValues();
}

void OpContext::requireInputs(size_t min, size_t max) const {
  size_t n = inputs.size();
  while (n > 0 && inputs[n - 1] < 0) --n;
  if (n < min || n > max) fail(fmt::format("expects {} to {} inputs, has {}", min, max, n));
  for (size_t i = 0; i < min; ++i)
    if (inputs[i] < 0) fail(fmt::format("input {} is required", i));
}

static const onnx::AttributeProto* findAttr(const onnx::NodeProto& proto, const char* name) {
  for (const auto& a : proto.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool OpContext::hasAttr(const char* name) const { return findAttr(proto, name) != nullptr; }

int64_t OpContext::attrInt(const char* name, int64_t fallback) const {
  const auto* a = findAttr(proto, name);
  return a ? a->i() : fallback;
}

float OpContext::attrFloat(const char* name, float fallback) const {
  const auto* a = findAttr(proto, name);
  return a ? a->f() : fallback;
}

std::string printableAttr(const std::string& text) {
  std::string out = text;
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

std::string OpContext::attrString(const char* name, const std::string& fallback) const {
  const auto* a = findAttr(proto, name);
  return a ? printableAttr(a->s()) : fallback;
}

std::vector<int64_t> OpContext::attrInts(const char* name, std::vector<int64_t> fallback) const {
  const auto* a = findAttr(proto, name);
  if (!a) return fallback;
  return {a->ints().begin(), a->ints().end()};
}

std::vector<double> OpContext::attrFloats(const char* name) const {
  const auto* a = findAttr(proto, name);
  if (!a) return {};
  return {a->floats().begin(), a->floats().end()};
}

void OpContext::requireFloat(size_t i) const {
  if (inputType(i) != DType::kF32)
    fail(fmt::format("element type {} is not supported (float32 only)", dtypeName(inputType(i))));
}

const onnx::TensorProto* OpContext::attrTensor(const char* name) const {
  const auto* a = findAttr(proto, name);
  return a && a->has_t() ? &a->t() : nullptr;
}

double OpContext::constantScalar(size_t i, const char* role) const {
  std::vector<double> values = constantDoubles(i, role);
  if (values.empty())
    fail(fmt::format("input '{}' ({}) is empty; it must hold a value", input(i).name, role));
  return values[0];
}

int64_t OpContext::normalizeAxis(int64_t axis, int64_t rank) const {
  if (axis < -rank || axis >= rank)
    fail(fmt::format("axis {} is out of range for rank {}", axis, rank));
  return axis < 0 ? axis + rank : axis;
}

int64_t OpContext::addSizes(int64_t a, int64_t b) const {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum))
    fail(fmt::format("size arithmetic overflows: {} + {}", a, b));
  return sum;
}

int64_t OpContext::mulSizes(int64_t a, int64_t b) const {
  int64_t product;
  if (__builtin_mul_overflow(a, b, &product))
    fail(fmt::format("size arithmetic overflows: {} * {}", a, b));
  return product;
}

void OpContext::checkType(const ir::TensorType& type, const std::string& what,
                          int64_t limitBytes) const {
  std::string tooLarge = type.checkSize(limitBytes);
  if (!tooLarge.empty()) fail(fmt::format("{}: {}", what, tooLarge));
}

void OpContext::emit(const std::string& op, std::vector<int> irInputs,
                     std::vector<ir::TensorType> outputTypes,
                     std::map<std::string, ir::Attribute> attrs) {
  std::vector<int> outputs;
  for (size_t i = 0; i < outputTypes.size(); ++i) {
    bool named =
        i < static_cast<size_t>(proto.output_size()) && !proto.output(static_cast<int>(i)).empty();
    std::string name =
        named ? proto.output(static_cast<int>(i)) : fmt::format("{}_out{}", nodeName, i);
    checkType(outputTypes[i], fmt::format("output '{}'", name));
    outputs.push_back(graph.addValue(name, outputTypes[i]));
    if (i < results.size()) results[i] = named ? outputs.back() : -1;
  }
  graph.addNode(op, nodeName, std::move(irInputs), std::move(outputs), std::move(attrs));
}

void OpContext::defineConstant(size_t index, ir::TensorType type, std::vector<uint8_t> bytes) {
  if (index >= results.size()) fail(fmt::format("output {} is missing", index));
  checkType(type, fmt::format("output '{}'", proto.output(static_cast<int>(index))),
            ir::kMaxConstantBytes);
  results.at(index) =
      graph.addConstant(proto.output(static_cast<int>(index)), std::move(type), std::move(bytes));
}

bool OpContext::isSized(size_t index) const {
  return sized && index < static_cast<size_t>(proto.output_size()) &&
         sized->count(proto.output(static_cast<int>(index)));
}

void OpContext::defineComputed(size_t index, ir::TensorType type, std::vector<uint8_t> bytes,
                               const std::string& op, std::vector<int> irInputs,
                               std::map<std::string, ir::Attribute> attrs) {
  if (!isSized(index)) return defineConstant(index, std::move(type), std::move(bytes));
  CGC_ASSERT(index == 0, "node '{}' computes output {} at run time", nodeName, index);
  emit(op, std::move(irInputs), {type}, std::move(attrs));
  graph.value(results.at(index)).known =
      std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
}

void OpContext::defineFilled(size_t index, const ir::TensorType& type,
                             std::vector<uint8_t> element) {
  if (index >= results.size()) fail(fmt::format("output {} is missing", index));
  const std::string& name = proto.output(static_cast<int>(index));
  checkType(type, fmt::format("output '{}'", name));
  CGC_ASSERT(static_cast<int64_t>(element.size()) == dtypeSize(type.dtype),
             "fill element of {} bytes for {}", element.size(), type.str());
  if (!isSized(index) && type.checkSize(generateBudget).empty()) {
    std::vector<uint8_t> bytes(type.bytes());
    for (size_t i = 0; i < bytes.size(); i += element.size())
      std::memcpy(bytes.data() + i, element.data(), element.size());
    generateBudget -= type.bytes();
    return defineConstant(index, type, std::move(bytes));
  }
  int fill = graph.addConstant(nodeName + "_fill", {type.dtype, {}}, std::move(element));
  results[index] = graph.addValue(name, type);
  graph.addNode("Expand", index == 0 ? nodeName : fmt::format("{}/out{}", nodeName, index), {fill},
                {results[index]});
}

ir::Shape broadcastShapes(const OpContext& ctx, const ir::Shape& a, const ir::Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  ir::Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      ctx.fail(fmt::format("shapes {} and {} cannot be broadcast", ir::shapeString(a),
                           ir::shapeString(b)));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

const std::map<std::string, OpImporter>& opImporters() {
  static const std::map<std::string, OpImporter> table = [] {
    std::map<std::string, OpImporter> t;
    registerElementwiseOps(t);
    registerNeuralNetOps(t);
    registerRecurrentOps(t);
    registerTensorOps(t);
    registerImageOps(t);
    registerQuantizationOps(t);
    registerDynamicOps(t);
    registerMathOps(t);
    registerIndexingOps(t);
    registerSignalOps(t);
    return t;
  }();
  return table;
}

}  // namespace cgc::frontend

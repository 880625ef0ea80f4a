// The declarations derived from a kernel's table of variants (a .def of
// rows Name, tier, layout in priority order: conv_variants.def,
// qconv_variants.def), written once for every such kernel. A kernel's
// header defines the parameters below, maps its .def's row macro to
// CGC_VARIANT and includes this file (no include guard: once per kernel),
// which undefines them:
//   CGC_VARIANTS_PREFIX  the kernel's name (Conv);
//   CGC_VARIANTS_DEF     its .def ("cgc/kernels/conv_variants.def");
//   CGC_VARIANTS_LAYOUT  the enum of the weights' layouts its rows name
//                        (ConvWeights), and CGC_VARIANTS_FIELD the info's
//                        member that holds it (weights).
// It declares, for Conv:
//  - enum class ConvVariant {kNone, k<Name>...}, with enumName ("kWinograd")
//    and enumTypeName (cgc/reflect.h's CGC_ENUM);
//  - struct ConvVariantInfo {variant, name ("Winograd"), tier, weights} and
//    kConvVariants[], a row each, in the .def's order;
//  - variantInfo(v), v's row (v is not kNone).

#define CGC_VARIANTS_CAT2(a, b) a##b
#define CGC_VARIANTS_CAT(a, b) CGC_VARIANTS_CAT2(a, b)
#define CGC_VARIANTS_STR2(a) #a
#define CGC_VARIANTS_STR(a) CGC_VARIANTS_STR2(a)
#define CGC_VARIANTS_ENUM CGC_VARIANTS_CAT(CGC_VARIANTS_PREFIX, Variant)
#define CGC_VARIANTS_INFO CGC_VARIANTS_CAT(CGC_VARIANTS_ENUM, Info)

enum class CGC_VARIANTS_ENUM : int32_t {
  kNone,
#define CGC_VARIANT(name, tier, layout) k##name,
#include CGC_VARIANTS_DEF
#undef CGC_VARIANT
};

constexpr const char* enumTypeName(CGC_VARIANTS_ENUM) {
  return CGC_VARIANTS_STR(CGC_VARIANTS_ENUM);
}
constexpr const char* enumName(CGC_VARIANTS_ENUM v) {
  switch (v) {
    case CGC_VARIANTS_ENUM::kNone:
      return "kNone";
#define CGC_VARIANT(name, tier, layout) \
  case CGC_VARIANTS_ENUM::k##name:      \
    return "k" #name;
#include CGC_VARIANTS_DEF
#undef CGC_VARIANT
  }
  return "";
}

/// A variant's declaration: its name, the instruction-set tier it needs
/// (cgc/isa_tiers.def; "": every build) and the layout of the weights it
/// reads.
struct CGC_VARIANTS_INFO {
  CGC_VARIANTS_ENUM variant;
  const char* name;
  const char* tier;
  CGC_VARIANTS_LAYOUT CGC_VARIANTS_FIELD;
};

inline constexpr CGC_VARIANTS_INFO CGC_VARIANTS_CAT(CGC_VARIANTS_CAT(k, CGC_VARIANTS_ENUM), s)[] = {
#define CGC_VARIANT(name, tier, layout) \
  {CGC_VARIANTS_ENUM::k##name, #name, tier, CGC_VARIANTS_LAYOUT::layout},
#include CGC_VARIANTS_DEF
#undef CGC_VARIANT
};

/// v's declaration (v is not kNone).
constexpr const CGC_VARIANTS_INFO& variantInfo(CGC_VARIANTS_ENUM v) {
  return CGC_VARIANTS_CAT(CGC_VARIANTS_CAT(k, CGC_VARIANTS_ENUM), s)[static_cast<int>(v) - 1];
}

#undef CGC_VARIANTS_INFO
#undef CGC_VARIANTS_ENUM
#undef CGC_VARIANTS_STR
#undef CGC_VARIANTS_STR2
#undef CGC_VARIANTS_CAT
#undef CGC_VARIANTS_CAT2
#undef CGC_VARIANTS_FIELD
#undef CGC_VARIANTS_LAYOUT
#undef CGC_VARIANTS_DEF
#undef CGC_VARIANTS_PREFIX

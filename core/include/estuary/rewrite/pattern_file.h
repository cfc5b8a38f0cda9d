#pragma once
// Pattern files: rewrite patterns written in YAML with graphs in the text form. The
// format is documented in docs/patterns.md:
//
//   patterns:
//     - name: fold_double_neg
//       match: |
//         graph @match(%x: ?[*]) {
//           %a = Neg(%x) : ?[*]
//           %b = Neg(%a) : ?[*]
//           return %b
//         }
//       replace: |
//         graph @replace(%x: ?[*]) {
//           %y = Identity(%x) : ?[*]
//           return %y
//         }
#include <string>
#include <string_view>

#include "estuary/rewrite/rewriter.h"

namespace estuary {

// Reads a pattern file. Errors name the file and line.
PatternSet loadPatternFile(const std::string& path);
// The same for YAML text; `source_name` stands for the file in messages.
PatternSet parsePatternYaml(std::string_view yaml, const std::string& source_name);

}  // namespace estuary

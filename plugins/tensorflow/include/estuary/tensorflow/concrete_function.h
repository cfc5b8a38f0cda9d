#pragma once
// The TensorFlow frontend's in-memory input: a tf.function's concrete function as
// TensorFlow holds it in a Python process, handed over by estuary.tensorflow. Its graph
// is the GraphDef TensorFlow would write (with the functions it calls), and the variables
// it captures arrive as tensors wrapping their memory, so nothing goes through a file.
// This is TF Adapter's graph mode for TF 2: the frontend "tensorflow" takes it as
// ModelInput::object(kConcreteFunctionObjectType, &function, owner, name).
#include <string>
#include <utility>
#include <vector>

#include "estuary/ir/tensor.h"

namespace estuary::tensorflow {

struct ConcreteFunction {
  // The serialized GraphDef of the function's graph (FunctionGraph.as_graph_def()).
  std::string graph_def;
  // The Placeholders of the arguments ("x:0"), with the names the model's inputs take.
  std::vector<std::pair<std::string, std::string>> inputs;
  // The values returned ("Identity:0"), with the names the model's outputs take.
  std::vector<std::pair<std::string, std::string>> outputs;
  // The Placeholders standing for captured values (a variable's resource handle, an eager
  // constant), by node name, with the values they hold now.
  std::vector<std::pair<std::string, Tensor>> captures;
};

// The object type of a ConcreteFunction given as a ModelInput.
inline constexpr const char* kConcreteFunctionObjectType = "tensorflow.concrete_function";

}  // namespace estuary::tensorflow

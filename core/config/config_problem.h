#pragma once

#include "yaml/yaml_problem.h"

namespace tb::config {

// A run config's problems are those of the one YAML reader (core/yaml).
using ConfigProblem = yaml::Problem;
using ProblemList = yaml::ProblemList;

} // namespace tb::config

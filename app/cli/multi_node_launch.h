#pragma once

#include "arg_parser.h"

#include <string>
#include <vector>

namespace tb::cli {

// `launch --hostfile`: the options it adds to launch's parser, and the run
// across the hostfile's machines over SSH (docs/LAUNCH.md).
void addMultiNodeOptions(ArgParser& parser);
int runMultiNodeLaunch(const ArgParser& parser, const std::vector<std::string>& trainerArguments);

} // namespace tb::cli

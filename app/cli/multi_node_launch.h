#pragma once

#include "arg_parser.h"

#include <string>
#include <vector>

namespace tb::cli {

// `launch --hostfile`: the options it adds to launch's parser, and the run
// across the hostfile's machines over SSH (docs/LAUNCH.md).
void addMultiNodeOptions(ArgParser& parser);
// An option of addMultiNodeOptions given without --hostfile: an error naming
// it, rather than an option accepted and ignored. Empty when there is none.
std::string multiNodeOptionWithoutHostfile(const ArgParser& parser);
int runMultiNodeLaunch(const ArgParser& parser, const std::vector<std::string>& trainerArguments);

} // namespace tb::cli

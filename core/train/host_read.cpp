#include "train/host_read.h"

#include <atomic>

namespace tb::train {

namespace {

std::atomic<std::uint64_t> g_reads{0};

} // namespace

std::vector<double> readToHost(const std::vector<torch::Tensor>& scalars)
{
    if (scalars.empty())
        return {};
    std::vector<torch::Tensor> flat;
    flat.reserve(scalars.size());
    const torch::Device device = scalars.front().device();
    for (const torch::Tensor& scalar : scalars)
        flat.push_back(scalar.detach().reshape({1}).to(device, torch::kDouble));
    const torch::Tensor host = torch::cat(flat).to(torch::kCPU);
    ++g_reads;
    const double* values = host.data_ptr<double>();
    return {values, values + host.numel()};
}

double readToHost(const torch::Tensor& scalar)
{
    return readToHost(std::vector<torch::Tensor>{scalar}).front();
}

std::vector<std::int64_t> readCountsToHost(const torch::Tensor& counts)
{
    const torch::Tensor host = counts.to(torch::kCPU, torch::kLong).contiguous();
    ++g_reads;
    const std::int64_t* values = host.data_ptr<std::int64_t>();
    return {values, values + host.numel()};
}

std::uint64_t hostReads()
{
    return g_reads.load();
}

} // namespace tb::train

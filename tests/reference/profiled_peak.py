"""The most bytes a piece of work allocated and had not yet freed at once,
read from PyTorch's profiler (profile_memory): every allocation and free
the work made, in time order. Shared by the reference scripts beside it."""

from torch.profiler import ProfilerActivity, profile


def most_allocated_during(work):
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        work()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    live = peak = 0
    for event in sorted(events, key=lambda e: e.start_ns()):
        live += event.nbytes()
        peak = max(peak, live)
    return peak

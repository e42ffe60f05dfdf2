#pragma once

#include "common/error.h"
#include "remote/call_watchdog.h"
#include "remote/ssh_target.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

// libssh's handles, kept out of every header but this one.
struct ssh_session_struct;
struct ssh_channel_struct;
struct sftp_session_struct;

namespace tb::remote {

// The most a command may print, stdout and stderr together: a host that
// prints more (a hostile one, or a `find` over millions of files) gets an
// Error naming it and the command, not all of this machine's memory.
inline constexpr std::size_t kMaxCommandOutputBytes = std::size_t(64) << 20;

struct [[nodiscard]] CommandResult {
    int exitStatus = -1;
    std::string output; // stdout
    std::string errorOutput; // stderr
};

// Empty when `running` (ssh_version(0): "0.10.6/openssl/zlib") is libssh
// 0.10.6 or newer, else why it will not do. The build requires 0.10.6 too
// (CMakeLists.txt); this catches an older library loaded at run time.
std::string libsshVersionProblem(const char* running);

// One authenticated SSH connection. Use it from one thread at a time.
class SshSession {
public:
    // Connects, checks the host key against the known-hosts file (an
    // unknown or changed key is an Error that gives its SHA-256 fingerprint
    // and how to check and add it) and authenticates with a key. Every
    // Error names target.describe().
    static common::Result<std::unique_ptr<SshSession>> connect(const SshTarget& target);
    // connect() in two halves, for a caller that may interrupt() it from
    // another thread while it connects: prepare() makes the session and sets
    // its options (no network); open() connects, checks the host key and
    // authenticates, each wait on the network bounded by the timeout and
    // ended at once by interrupt(). Only a host name's DNS lookup is not.
    static common::Result<std::unique_ptr<SshSession>> prepare(const SshTarget& target);
    common::Status open();
    ~SshSession();
    SshSession(const SshSession&) = delete;
    SshSession& operator=(const SshSession&) = delete;

    // Runs `command` through the remote user's shell (quote its words with
    // launch::shellQuote) and waits for it, at most `seconds` (0: the
    // target's timeout; a command whose work grows with its input, such as
    // a checksum, gets more). A failure to run it is an Error; a command
    // that ran and failed is a CommandResult with its exit status. What the
    // shell's start-up files print (a banner from ~/.bashrc) is left out of
    // both outputs: a line printed before the command marks where its own
    // output starts. Output beyond kMaxCommandOutputBytes is an Error (the
    // channel is closed, which ends the command there with SIGPIPE).
    // `exports` (name, value) are exported to the command inside the script
    // sent on stdin, so no process list on either side shows them (a run
    // secret), and no message of ours repeats them.
    common::Result<CommandResult> run(const std::string& command, double seconds = 0,
        const std::vector<std::pair<std::string, std::string>>& exports = {});

    // Where runWithInput() takes its command's stdin from: fills `buffer`
    // with up to `capacity` bytes and returns how many; 0 ends the input.
    using InputChunks = std::function<std::size_t(char* buffer, std::size_t capacity)>;
    static constexpr std::size_t kInputChunkBytes = std::size_t(256) << 10;

    // Runs `command` as run() does, with `input`'s bytes on its stdin, then
    // the end of file (`cat > FILE` is an upload). The bytes ride the SSH
    // channel's flow control, as many in flight as its window holds, where
    // an SFTP write waits for each answer: over a long round trip that is
    // the difference between link speed and 32 KiB a round trip. No
    // deadline covers the whole stream: each write must go out within the
    // target's timeout, and the command must end within it after the last.
    // A command that fails before it has read everything (a folder it
    // cannot write) is a CommandResult with its exit status and stderr.
    common::Result<CommandResult> runWithInput(
        const std::string& command, const InputChunks& input);

    // The SFTP subsystem, opened on first use (a bounded call).
    common::Result<sftp_session_struct*> sftp();
    // `count` SFTP sessions, each on a channel of its own (sftp()'s first,
    // the others opened on first use and kept): a read striped over them is
    // bound by `count` receive windows, not by one.
    common::Result<std::vector<sftp_session_struct*>> sftpChannels(std::size_t count);

    // Bounds the libssh calls made while it lives: each must get its answer
    // within the target's timeout (progressed() starts the count again
    // after each chunk of a transfer), or the connection is shut down and
    // the call fails. The session is then closed for good.
    class Bounded {
    public:
        explicit Bounded(SshSession& session);
        ~Bounded();
        Bounded(const Bounded&) = delete;
        Bounded& operator=(const Bounded&) = delete;
        void progressed();

    private:
        SshSession& m_session;
    };

    // Whether a bounded call went unanswered and closed the connection.
    bool timedOut() const { return m_watchdog.fired(); }
    // Closes the connection for good from any thread (the one member
    // another thread may call): a bounded call under way fails at once,
    // and so does every later one.
    void interrupt() { m_watchdog.interrupt(); }
    // Why a libssh call failed: "no answer within 15 s: ..." when it went
    // unanswered, else `otherwise` (libssh's or SFTP's own reason).
    std::string failureReason(std::string otherwise) const;

    const SshTarget& target() const { return m_target; }

private:
    SshSession(const SshTarget& target, ssh_session_struct* session);
    common::Status handshake();
    struct ChannelCloser {
        void operator()(ssh_channel_struct* channel) const;
    };
    using ShellChannel = std::unique_ptr<ssh_channel_struct, ChannelCloser>;
    // A channel running `/bin/sh -s` with `script` sent on its stdin (the
    // end of file not yet); errors name `command`.
    common::Result<ShellChannel> startShell(const std::string& command, const std::string& script);
    // Reads a command's output into `result` until `done` says so (empty:
    // never) or its end of file, at most `limit` seconds.
    common::Status readUntil(ssh_channel_struct* channel, const std::string& command, double limit,
        Bounded& bounded, CommandResult& result,
        const std::function<bool(const CommandResult&)>& done);
    // A command's output and exit status once it has its input: at most
    // `limit` seconds to its end of file; `result` holds what was read before.
    common::Result<CommandResult> collect(ssh_channel_struct* channel, const std::string& command,
        double limit, Bounded& bounded, CommandResult result = {});

    SshTarget m_target;
    ssh_session_struct* m_session = nullptr;
    std::vector<sftp_session_struct*> m_sftp; // sftp() is the first
    common::Result<sftp_session_struct*> openSftp();
    CallWatchdog m_watchdog;
    int m_boundedDepth = 0; // Bounded scopes open (a failure path may nest one)
};

} // namespace tb::remote

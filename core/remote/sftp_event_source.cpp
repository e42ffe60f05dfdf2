#include "remote/sftp_event_source.h"

#include <libssh/libssh.h>
#include <libssh/sftp.h>

#include <fcntl.h>

namespace tb::remote {

namespace {

using common::Error;

class SftpEventSource : public metrics::EventSource {
public:
    SftpEventSource(SshSession& session, std::string path)
        : m_session(session)
        , m_path(std::move(path))
    {
    }
    ~SftpEventSource() override { close(); }

    std::string name() const override { return m_session.target().host + ":" + m_path; }

    common::Result<std::optional<uint64_t>> open() override
    {
        close();
        common::Result<sftp_session> sftp = m_session.sftp();
        if (!sftp)
            return sftp.error();
        m_sftp = *sftp;
        const SshSession::Bounded bounded(m_session);
        m_file = sftp_open(m_sftp, m_path.c_str(), O_RDONLY, 0);
        if (!m_file) {
            if (sftp_get_error(m_sftp) == SSH_FX_NO_SUCH_FILE)
                return std::optional<uint64_t>{};
            return failure("cannot open");
        }
        sftp_attributes attributes = sftp_fstat(m_file);
        if (!attributes)
            return failure("cannot stat");
        const uint64_t size = attributes->size;
        sftp_attributes_free(attributes);
        return std::optional<uint64_t>(size);
    }

    common::Result<std::size_t> readAt(uint64_t offset, char* buffer, std::size_t length) override
    {
        if (sftp_seek64(m_file, offset) != 0)
            return failure("cannot seek in");
        const SshSession::Bounded bounded(m_session);
        const ssize_t n = sftp_read(m_file, buffer, length);
        if (n < 0)
            return failure("cannot read");
        return static_cast<std::size_t>(n);
    }

    void close() override
    {
        if (m_file) {
            const SshSession::Bounded bounded(m_session);
            sftp_close(m_file);
        }
        m_file = nullptr;
    }

private:
    Error failure(const std::string& what)
    {
        const int code = m_sftp ? sftp_get_error(m_sftp) : -1;
        Error error{name() + ": " + what + " the event file ("
                + m_session.failureReason("SFTP error " + std::to_string(code)
                    + (code == SSH_FX_PERMISSION_DENIED ? ": permission denied" : ""))
                + ")",
            {}};
        close();
        return error;
    }

    SshSession& m_session;
    std::string m_path;
    sftp_session m_sftp = nullptr;
    sftp_file m_file = nullptr;
};

} // namespace

std::unique_ptr<metrics::EventSource> sftpEventSource(SshSession& session, std::string path)
{
    return std::make_unique<SftpEventSource>(session, std::move(path));
}

} // namespace tb::remote

#include "dist/join_proof.h"

#include "common/hex.h"
#include "common/run_secret.h"
#include "dist/arrival.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <thread>

namespace tb::dist {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kChallengePoll = std::chrono::milliseconds(20);
constexpr std::size_t kNonceBytes = 16;
const std::string kChallengeKey = "join/challenge";
const std::string kNoSecret = "none";
const std::string kRefused = "refused";
const std::string kSchemePrefix = "hmac-sha256:";

std::string proofKey(int rank)
{
    return "join/proof/" + std::to_string(rank);
}

std::string answerKey(int rank)
{
    return "join/answer/" + std::to_string(rank);
}

// A refused rank says it read the refusal, so that rank 0 (whose store goes
// with it) leaves only after: the refused rank then names the cause rather
// than a store gone.
std::string refusalReadKey(int rank)
{
    return "join/refusal_read/" + std::to_string(rank);
}
constexpr auto kRefusalReadWait = std::chrono::seconds(5);

// What each side signs: the role keeps a rank's proof from passing as rank
// 0's answer, the run id and rank keep it from passing anywhere else.
std::string proofMessage(
    const std::string& role, const RankEnvironment& environment, int rank, const std::string& nonce)
{
    return "tunebench-join|" + role + "|" + environment.runId + "|" + std::to_string(rank) + "|"
        + nonce;
}

bool sameText(const std::string& a, const std::string& b)
{
    return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

void put(c10d::Store& store, const std::string& key, const std::string& value)
{
    store.set(key, std::vector<std::uint8_t>(value.begin(), value.end()));
}

// The key's value once it is there; nothing by the deadline: empty.
std::optional<std::string> awaitKey(
    c10d::Store& store, const std::string& key, Clock::time_point deadline)
{
    while (!store.check({key})) {
        if (Clock::now() >= deadline)
            return std::nullopt;
        std::this_thread::sleep_for(kChallengePoll);
    }
    const std::vector<std::uint8_t> bytes = store.get(key);
    return std::string(bytes.begin(), bytes.end());
}

std::string nonce()
{
    common::Result<std::string> made = common::randomHex(kNonceBytes);
    if (!made)
        throw std::runtime_error(made.error().message);
    return *made;
}

// Appended rather than joined with '+': GCC 12 warns falsely (array-bounds)
// on such chains of temporaries.
common::Error secretError(const RankEnvironment& environment, const std::string& what)
{
    std::string message = rendezvousPlace(environment);
    message.append(": ").append(what);
    std::string hint = "every rank of a run needs the same ";
    hint.append(common::kRunSecretVariable)
        .append("; tunebench-cli launch gives it to its ranks (docs/LAUNCH.md, \"What listens\")");
    return common::Error{message, hint};
}

// Rank 0: one rank's proof, answered.
common::Status admitRank(c10d::Store& store, const RankEnvironment& environment, int rank,
    const std::string& challenge, Clock::time_point deadline)
{
    const std::string who = "rank " + std::to_string(rank);
    const std::optional<std::string> proof = awaitKey(store, proofKey(rank), deadline);
    if (!proof)
        return secretError(environment, who + " gave no proof of the run secret in time");
    if (*proof == kNoSecret)
        return secretError(environment,
            who + " was started without " + common::kRunSecretVariable
                + ", which this run requires");
    const std::size_t colon = proof->find(':');
    const std::string theirNonce = proof->substr(0, colon);
    const bool valid = colon != std::string::npos && colon == 2 * kNonceBytes
        && sameText(proof->substr(colon + 1),
            hmacSha256Hex(
                environment.runSecret, proofMessage("rank", environment, rank, challenge)));
    if (!valid) {
        put(store, answerKey(rank), kRefused);
        awaitKey(store, refusalReadKey(rank), std::min(deadline, Clock::now() + kRefusalReadWait));
        return secretError(environment,
            who
                + " could not prove it knows this run's secret: a process of another run, or one "
                  "that "
                  "is not ours, tried to join in its place");
    }
    put(store, answerKey(rank),
        hmacSha256Hex(environment.runSecret, proofMessage("rank0", environment, rank, theirNonce)));
    return common::Ok{};
}

// Rank 0 without a secret: a rank that has one refuses to join and says
// so, so that this side ends at once too, not at the collectives' timeout.
common::Status checkNoSecretRefusal(
    c10d::Store& store, const RankEnvironment& environment, int rank, Clock::time_point deadline)
{
    const std::optional<std::string> proof = awaitKey(store, proofKey(rank), deadline);
    if (!proof)
        return secretError(environment,
            "rank " + std::to_string(rank) + " said nothing at the rendezvous in time");
    if (*proof != kRefused)
        return common::Ok{};
    std::string what =
        "rank " + std::to_string(rank) + " has a run secret and this rank 0 has none (";
    what.append(common::kRunSecretVariable).append("), so it does not join");
    return secretError(environment, what);
}

} // namespace

common::Status admitRanks(c10d::Store& store, const RankEnvironment& environment,
    const std::string& challenge, Clock::time_point deadline)
{
    for (int rank = 1; rank < environment.worldSize; ++rank) {
        common::Status admitted = environment.runSecret.empty()
            ? checkNoSecretRefusal(store, environment, rank, deadline)
            : admitRank(store, environment, rank, challenge, deadline);
        if (!admitted)
            return admitted;
    }
    return common::Ok{};
}

common::Status joinWithProof(
    c10d::Store& store, const RankEnvironment& environment, Clock::time_point deadline)
{
    const std::optional<std::string> challenge = awaitKey(store, kChallengeKey, deadline);
    if (!challenge)
        return secretError(environment, "rank 0 posted no challenge in time");
    const bool required = challenge->starts_with(kSchemePrefix);
    if (environment.runSecret.empty()) {
        put(store, proofKey(environment.rank), kNoSecret);
        if (!required)
            return common::Ok{};
        std::string what = "this run requires ";
        what.append(common::kRunSecretVariable)
            .append(" (rank 0 has one) and this rank was started without it");
        return secretError(environment, what);
    }
    if (!required) {
        put(store, proofKey(environment.rank), kRefused);
        return secretError(environment,
            "rank 0 has no run secret and this rank has one: refusing to "
            "join a store that cannot prove it serves this run");
    }
    const std::string ours = nonce();
    put(store, proofKey(environment.rank),
        ours + ":"
            + hmacSha256Hex(environment.runSecret,
                proofMessage("rank", environment, environment.rank,
                    challenge->substr(kSchemePrefix.size()))));
    const std::optional<std::string> answer =
        awaitKey(store, answerKey(environment.rank), deadline);
    if (!answer)
        return secretError(environment, "rank 0 did not answer this rank's proof in time");
    if (*answer == kRefused) {
        put(store, refusalReadKey(environment.rank), "1");
        return secretError(environment, "rank 0 refused this rank's proof: its run secret differs");
    }
    if (!sameText(*answer,
            hmacSha256Hex(
                environment.runSecret, proofMessage("rank0", environment, environment.rank, ours))))
        return secretError(environment,
            "the store's answer does not prove this run's secret: whoever "
            "serves it is not this run's rank 0");
    return common::Ok{};
}

std::string postJoinChallenge(c10d::Store& store, const RankEnvironment& environment)
{
    if (environment.runSecret.empty()) {
        put(store, kChallengeKey, kNoSecret);
        return {};
    }
    const std::string challenge = nonce();
    put(store, kChallengeKey, kSchemePrefix + challenge);
    return challenge;
}

std::string hmacSha256Hex(const std::string& secret, const std::string& message)
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    HMAC(EVP_sha256(), secret.data(), int(secret.size()),
        reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &length);
    return common::hexBytes(digest, length);
}

std::string signText(const std::string& secret, const std::string& runId, const std::string& text)
{
    if (secret.empty())
        return text;
    return text + "\n" + kSchemePrefix
        + hmacSha256Hex(secret, "tunebench-text|" + runId + "|" + text);
}

std::string verifiedText(
    const std::string& secret, const std::string& runId, const std::string& signedText)
{
    if (secret.empty())
        return signedText;
    const std::size_t newline = signedText.rfind('\n');
    if (newline == std::string::npos)
        return {};
    const std::string text = signedText.substr(0, newline);
    return sameText(signedText, signText(secret, runId, text)) ? text : std::string();
}

} // namespace tb::dist

#pragma once

#include "common/error.h"

#include <string>
#include <vector>

namespace tb::yaml {

// One thing wrong with a YAML document, located by YAML path and position so
// the user can fix every problem in one edit.
struct Problem {
    std::string yamlPath; // "training.learning_rate"; empty for the document itself
    int line = 0; // 1-based; 0 when unknown
    int column = 0; // 1-based; 0 when unknown
    std::string message; // "got -0.1, expected a positive number"
    std::string hint; // "did you mean learning_rate?"

    // "run.yaml:12:3: training.learning_rate: got -0.1, expected a positive number"
    std::string toString(const std::string& file) const;
};

// Problems of one document, in the order they were found.
class ProblemList {
public:
    void add(Problem problem) { m_problems.push_back(std::move(problem)); }
    bool isEmpty() const { return m_problems.empty(); }
    std::size_t size() const { return m_problems.size(); }
    const std::vector<Problem>& items() const { return m_problems; }
    // In document order (problems without a position last), as an editor lists them.
    void sortByPosition();

    // All problems in one Error, one per line, so a front end that only
    // shows an Error still shows every problem.
    common::Error toError(const std::string& file) const;

private:
    std::vector<Problem> m_problems;
};

} // namespace tb::yaml

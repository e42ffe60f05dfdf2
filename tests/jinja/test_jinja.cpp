// The Jinja engine on its own: each construct the published chat templates
// use, rendered as Jinja 3 with transformers' settings renders it (the
// expected strings are what jinja2 3.1 writes for the same source and
// variables), and each kind of bad template refused with its place.
#include "jinja/template.h"

#include <QTest>

using tb::jinja::RenderLimits;
using tb::jinja::Template;
using tb::jinja::Value;
using tb::jinja::ValueDict;
using tb::jinja::ValueList;

namespace {

Value variables()
{
    const auto json = nlohmann::ordered_json::parse(R"({
        "messages": [{"role": "system", "content": "  Be brief. "},
                     {"role": "user", "content": "Hi"},
                     {"role": "assistant", "content": "Hello!"}],
        "bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": true,
        "tools": [{"name": "f", "parameters": {"x": 1, "y": [1.5, "é"]}}],
        "n": 7, "empty": [], "nothing": null})");
    return Value::fromJson(json);
}

QString render(const QString& source, QString* problem = nullptr)
{
    auto parsed = Template::parse(source.toStdString());
    if (!parsed.ok()) {
        if (problem)
            *problem = QString::fromStdString(parsed.error().message);
        return "<parse error>";
    }
    auto rendered = parsed.value().render(variables());
    if (!rendered.ok()) {
        if (problem)
            *problem = QString::fromStdString(rendered.error().message);
        return "<render error>";
    }
    return QString::fromStdString(rendered.value().text);
}

} // namespace

class TestJinja : public QObject {
    Q_OBJECT

private slots:
    void renders_data()
    {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("expected");
        QTest::addRow("text and output") << "a{{ bos_token }}b"
                                         << "a<s>b";
        QTest::addRow("undefined prints nothing") << "[{{ missing }}]"
                                                  << "[]";
        QTest::addRow("none prints None") << "{{ nothing }}"
                                          << "None";
        QTest::addRow("item and attribute") << "{{ messages[1]['role'] }}/{{ messages[1].content }}"
                                            << "user/Hi";
        QTest::addRow("negative index") << "{{ messages[-1].content }}"
                                        << "Hello!";
        QTest::addRow("slice from 1") << "{{ messages[1:]|length }}"
                                      << "2";
        QTest::addRow("reversed") << "{% for m in messages[::-1] %}{{ m.role[0] }}{% endfor %}"
                                  << "aus";
        QTest::addRow("filters bind before +") << "{{ messages[0].content | trim + '|' }}"
                                               << "Be brief.|";
        QTest::addRow("loop variables") << "{% for m in messages %}{{ loop.index0 }}{{ loop.first "
                                           "}}{{ loop.last }} {% endfor %}"
                                        << "0TrueFalse 1FalseFalse 2FalseTrue ";
        QTest::addRow("loop filter and else")
            << "{% for m in messages if m.role == 'tool' %}x{% else %}none{% endfor %}"
            << "none";
        QTest::addRow("break and continue")
            << "{% for i in range(5) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 3 %}"
               "{% break %}{% endif %}{{ i }}{% endfor %}"
            << "02";
        QTest::addRow("set does not leave a loop")
            << "{% set x = 1 %}{% for m in messages %}{% set x = 2 %}{% endfor %}{{ x }}"
            << "1";
        QTest::addRow("namespace carries out of a loop")
            << "{% set ns = namespace(count=0) %}{% for m in messages %}{% set ns.count = "
               "ns.count + 1 %}{% endfor %}{{ ns.count }}"
            << "3";
        QTest::addRow("if elif else") << "{% if n > 9 %}a{% elif n is odd %}b{% else %}c{% endif %}"
                                      << "b";
        QTest::addRow("tests") << "{{ missing is defined }}{{ nothing is none }}{{ tools is "
                                  "iterable }}{{ tools[0] is mapping }}{{ n is not string }}"
                               << "FalseTrueTrueTrueTrue";
        QTest::addRow("global functions are defined")
            << "{{ strftime_now is defined }}{{ raise_exception is undefined }}{{ range is not "
               "defined }}"
            << "TrueFalseFalse";
        QTest::addRow("in and not in")
            << "{{ 'user' in messages[1].role }}{{ 'tool_calls' not in messages[2] }}{{ 2 in "
               "[1, 2] }}"
            << "TrueTrueTrue";
        QTest::addRow("and or return operands") << "{{ empty or 'x' }}{{ n and 'y' }}"
                                                << "xy";
        QTest::addRow("conditional expression") << "{{ 'a' if empty else 'b' }}"
                                                << "b";
        QTest::addRow("arithmetic as Python")
            << "{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1 + 2.0 }}"
            << "3 -4 2 3.5 1024 3.0";
        QTest::addRow("concatenation with ~") << "{{ n ~ '-' ~ nothing }}"
                                              << "7-None";
        QTest::addRow("tojson as transformers writes it")
            << "{{ tools[0] | tojson }}"
            << R"({"name": "f", "parameters": {"x": 1, "y": [1.5, "é"]}})";
        QTest::addRow("tojson indented")
            << "{{ tools[0].parameters | tojson(indent=2) }}"
            << "{\n  \"x\": 1,\n  \"y\": [\n    1.5,\n    \"é\"\n  ]\n}";
        QTest::addRow("string methods")
            << "{{ '  a b  '.strip() }}|{{ 'x</think>y'.split('</think>')[-1] }}|{{ "
               "'\\nz'.lstrip('\\n') }}|{{ 'abc'.startswith(('x', 'a')) }}|{{ 'ab'.upper() }}"
            << "a b|y|z|True|AB";
        QTest::addRow("dict methods")
            << "{% for k, v in tools[0].parameters.items() %}{{ k }}={{ v }};{% endfor %}{{ "
               "tools[0].get('missing', 'd') }}"
            << "x=1;y=[1.5, 'é'];d";
        QTest::addRow("items filter and join")
            << "{{ tools[0].parameters | items | map('first') | join(',') }}"
            << "x,y";
        QTest::addRow("select, reject, selectattr")
            << "{{ [1, 2, 3, 4] | select('odd') | list }}{{ messages | rejectattr('role', "
               "'equalto', 'system') | map(attribute='role') | join(' ') }}"
            << "[1, 3]user assistant";
        QTest::addRow("default") << "{{ missing | default('d') }}{{ '' | default('e', true) }}"
                                 << "de";
        QTest::addRow("block set") << "{% set x %}a{{ n }}{% endset %}[{{ x }}]"
                                   << "[a7]";
        QTest::addRow("generation block")
            << "{% generation %}{{ messages[2].content }}{% endgeneration %}"
            << "Hello!";
        QTest::addRow("dict and list literals") << "{{ {'a': [1, 'b'], 'c': none} }}"
                                                << "{'a': [1, 'b'], 'c': None}";
        QTest::addRow("escapes in strings") << "{{ 'a\\tb\\u00e9\\x41' }}"
                                            << "a\tbéA";
        QTest::addRow("repr quotes") << "{{ [\"it's\"] }}"
                                     << "[\"it's\"]";
        QTest::addRow("float repr") << "{{ [0.1, 1e-05, 1e16, 2.5e15, 100.0] }}"
                                    << "[0.1, 1e-05, 1e+16, 2500000000000000.0, 100.0]";
        QTest::addRow("whitespace control") << "a  {{- ' b ' -}}  \n c"
                                            << "a b c";
        QTest::addRow("trim_blocks and lstrip_blocks")
            << "x\n    {% if true %}\ny\n    {% endif %}\nz"
            << "x\ny\nz";
        QTest::addRow("lstrip only before blocks, not output") << "  {{ 'a' }}\n  {# note #}\nb"
                                                               << "  a\nb";
        QTest::addRow("trailing newline dropped") << "a\n"
                                                  << "a";
        QTest::addRow("length counts characters") << "{{ 'é'|length }}"
                                                  << "1";
    }
    void renders()
    {
        QFETCH(QString, source);
        QFETCH(QString, expected);
        QString problem;
        QCOMPARE(render(source, &problem), expected);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
    }

    void refuses_data()
    {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("message");
        QTest::addRow("unclosed tag") << "a {{ b"
                                      << "line 1, column 3: a tag is not closed (expected '}}')";
        QTest::addRow("unclosed string") << "{{ 'abc }}"
                                         << "a string is not closed";
        QTest::addRow("unclosed block") << "{% if x %}a"
                                        << "'{% if %}' is not closed by '{% endif %}'";
        QTest::addRow("stray end") << "a\n{% endfor %}"
                                   << "line 2, column 1: '{% endfor %}' without";
        QTest::addRow("macro") << "{% macro f() %}{% endmacro %}"
                               << "'{% macro %}' is not supported";
        QTest::addRow("empty subscript") << "{{ messages[ ] }}"
                                         << "line 1, column 14: expected an index or a slice";
        QTest::addRow("bad character") << "{{ a ; b }}"
                                       << "unexpected character ';'";
        QTest::addRow("raise_exception") << "{{ raise_exception('System role not supported') }}"
                                         << "the template raised: System role not supported";
        QTest::addRow("attribute of undefined") << "x\n{{ missing.content }}"
                                                << "cannot read 'content' of an undefined value";
        QTest::addRow("type error") << "{{ 'a' + 1 }}"
                                    << "unsupported operand types for +: 'str' and 'int'";
        QTest::addRow("unknown filter") << "{{ n | frobnicate }}"
                                        << "filter 'frobnicate'";
        QTest::addRow("set on a dict") << "{% set d = {} %}{% set d.x = 1 %}"
                                       << "is not a namespace";
        QTest::addRow("division by zero") << "{{ 1 // 0 }}"
                                          << "division by zero";
        QTest::addRow("too deep") << "{{ " + QString("(").repeated(300) + "1"
                + QString(")").repeated(300) + " }}"
                                  << "nest deeper than 200";
    }
    void refuses()
    {
        QFETCH(QString, source);
        QFETCH(QString, message);
        QString problem;
        render(source, &problem);
        QVERIFY2(problem.contains(message), qPrintable(problem));
    }

    // A template from outside cannot run away with time or memory.
    void limitsHold_data()
    {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("message");
        QTest::addRow("loops") << "{% for i in range(100000) %}{% for j in range(100000) %}{% "
                                  "endfor %}{% endfor %}"
                               << "loops ran more than";
        QTest::addRow("output") << "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}"
                                << "the output passes";
        QTest::addRow("range") << "{{ range(10000000) | length }}"
                               << "range is longer than";
        QTest::addRow("a string doubling")
            << "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s "
               "%}{% endfor %}"
            << "a string passes";
        QTest::addRow("a list of big strings")
            << "{% set ns = namespace(l=[]) %}{% for i in range(100) %}{% set ns.l = ns.l + ['x' "
               "* 10000000] %}{% endfor %}"
            << "a list or dict holds more than";
        QTest::addRow("a namespace holding itself")
            << "{% set ns = namespace(a=1) %}{% set ns.a = [ns] %}{{ ns }}"
            << "a namespace cannot be kept in a list or dict";
        QTest::addRow("values nesting")
            << "{% set ns = namespace(x=1) %}{% for i in range(200) %}{% set ns.x = [ns.x] %}{% "
               "endfor %}"
            << "values nest deeper than 100";
    }
    void limitsHold()
    {
        QFETCH(QString, source);
        QFETCH(QString, message);
        auto parsed = Template::parse(source.toStdString());
        QVERIFY(parsed.ok());
        RenderLimits limits;
        limits.maxOutputBytes = 1 << 20;
        auto rendered = parsed.value().render(variables(), limits);
        QVERIFY(!rendered.ok());
        QVERIFY2(QString::fromStdString(rendered.error().message).contains(message),
            rendered.error().message.c_str());
    }

    void generationRangesMarkTheAssistant()
    {
        auto parsed = Template::parse("{% for m in messages %}<{{ m.role }}>{% if m.role == "
                                      "'assistant' %}{% generation %}{{ m.content }}{% "
                                      "endgeneration %}{% else %}{{ m.content }}{% endif %}{% "
                                      "endfor %}");
        QVERIFY(parsed.ok());
        auto rendered = parsed.value().render(variables());
        QVERIFY(rendered.ok());
        QCOMPARE(rendered.value().generated.size(), std::size_t(1));
        const auto [begin, end] = rendered.value().generated.front();
        QCOMPARE(rendered.value().text.substr(begin, end - begin), std::string("Hello!"));
    }
};

QTEST_APPLESS_MAIN(TestJinja)
#include "test_jinja.moc"

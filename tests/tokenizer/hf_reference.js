// Reference output of Hugging Face's own `tokenizers` library (its native
// npm binding) for test_tokenizer_hf and the tokenizer benchmark.
//
//   node hf_reference.js ids   <node_modules> <request.json> <out.json>
//     request: {"tokenizers": [paths], "texts": [strings]}
//     out: {"version": "...", "results": [{"file", "ids", "idsPlain", "decoded", "decodedSkip"}]}
//   node hf_reference.js bench <node_modules> <tokenizer.json> <text file> <repeats> [lines]
//     prints {"tokens": n, "seconds": best wall time of one encode of the whole text}, or
//     with "lines", of one encodeBatch over its non-empty lines (set
//     TOKENIZERS_PARALLELISM=false for one thread)
'use strict';
const fs = require('fs');
const path = require('path');

const [mode, modulesDir, ...rest] = process.argv.slice(2);
const {Tokenizer} = require(path.resolve(modulesDir, 'tokenizers'));

async function ids(requestFile, outFile) {
    const request = JSON.parse(fs.readFileSync(requestFile, 'utf8'));
    const version = require(path.resolve(modulesDir, 'tokenizers', 'package.json')).version;
    const results = [];
    for (const file of request.tokenizers) {
        const tokenizer = Tokenizer.fromFile(file);
        // Batches: one call per kind instead of four per text (the binding's
        // per-call cost dominates otherwise). Results keep the input order.
        const withSpecial = (await tokenizer.encodeBatch(request.texts)).map((e) => e.getIds());
        const plain = (await tokenizer.encodeBatch(request.texts, {addSpecialTokens: false}))
                          .map((e) => e.getIds());
        const result = {
            file,
            ids: withSpecial,
            idsPlain: plain,
            decoded: await tokenizer.decodeBatch(withSpecial, false),
            decodedSkip: await tokenizer.decodeBatch(withSpecial, true),
        };
        results.push(result);
    }
    fs.writeFileSync(outFile, JSON.stringify({version, results}));
}

async function bench(file, textFile, repeats, lines) {
    const tokenizer = Tokenizer.fromFile(file);
    const text = fs.readFileSync(textFile, 'utf8');
    const inputs = lines ? text.split('\n').map((l) => l.replace(/\r$/, '')).filter((l) => l.length > 0)
                         : null;
    let best = Infinity;
    let tokens = 0;
    for (let i = 0; i < repeats; ++i) {
        const start = process.hrtime.bigint();
        if (lines) {
            const encodings = await tokenizer.encodeBatch(inputs, {addSpecialTokens: false});
            tokens = encodings.reduce((n, e) => n + e.getIds().length, 0);
        } else {
            const encoding = await tokenizer.encode(text, null, {addSpecialTokens: false});
            tokens = encoding.getIds().length;
        }
        best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e9);
    }
    console.log(JSON.stringify({tokens, seconds: best}));
}

(async () => {
    if (mode === 'ids')
        await ids(rest[0], rest[1]);
    else if (mode === 'bench')
        await bench(rest[0], rest[1], Number(rest[2] || 3), rest[3] === 'lines');
    else
        throw new Error('usage: node hf_reference.js ids|bench <node_modules> ...');
})().catch((error) => {
    console.error(String(error && error.stack || error));
    process.exit(1);
});

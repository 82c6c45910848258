// What a piscina user runs: a plain task file whose default export returns its input.
export default (x) => x;

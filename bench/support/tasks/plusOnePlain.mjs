// The same trivial task as piscina's users write it: a plain task file, input plus one.
export default (x) => x + 1;

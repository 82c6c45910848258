// A producer of bench/data.bench.ts: `config.bytes` bytes as one ArrayBuffer, or split into `config.parts` ArrayBuffers
// (a hash edge's producer: one part per consumer subtask).
export default (context) => {
  const { bytes, parts } = context.config;
  const fill = context.subtaskIndex & 255;
  if (parts === undefined) return new Uint8Array(bytes).fill(fill).buffer;
  return Array.from({ length: parts }, () => new Uint8Array(bytes / parts).fill(fill).buffer);
};

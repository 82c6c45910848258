// bench/soak.ts's slow subtask: waits `config.ms` (default 100), or rejects at once when canceled.
export default function sleep(context) {
  const ms = context.config?.ms ?? 100;
  const { signal } = context;
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(ms);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

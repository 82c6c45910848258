// bench/soak.ts's failing subtask: its first attempt throws, the restart returns its subtask index.
export default function failFirstAttempt(context) {
  if (context.attemptNumber === 0) throw new Error(`attempt 0 of ${context.vertexId}#${context.subtaskIndex} fails`);
  return context.subtaskIndex;
}

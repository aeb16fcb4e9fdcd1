import { useEffect, useState } from 'react';

/** `value`, once it has stopped changing for `ms` (a filter fires one request per pause, not per keystroke). */
export function useDebounced<T>(value: T, ms = 300): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return settled;
}

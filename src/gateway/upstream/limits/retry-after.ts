/**
 * Retry-After (RFC 9110 section 10.2.3): `delay-seconds` or an `HTTP-date`. Returns the wait in
 * ms from `now`, or undefined when the value is absent or unreadable (the caller then backs off).
 */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^[0-9]{1,10}$/.test(text)) return Number(text) * 1000;
  const at = parseHttpDate(text, now);
  return at === undefined ? undefined : Math.max(0, at - now);
}

const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_DAY = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTH = '(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '([0-9]{2}):([0-9]{2}):([0-9]{2})';
const IMF_FIXDATE = new RegExp(`^${DAY}, ([0-9]{2}) ${MONTH} ([0-9]{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^${LONG_DAY}, ([0-9]{2})-${MONTH}-([0-9]{2}) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^${DAY} ${MONTH} ([0-9 ][0-9]) ${TIME} ([0-9]{4})$`);
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** The three HTTP-date forms of RFC 9110 section 5.6.7, all in GMT; anything else is undefined. */
function parseHttpDate(text: string, now: number): number | undefined {
  const parts = httpDateParts(text, now);
  if (parts === undefined) return undefined;
  const [year, month, day, hour, minute, second] = parts;
  const at = Date.UTC(Number(year), MONTHS.indexOf(month), Number(day), Number(hour), Number(minute), Number(second));
  return Number.isNaN(at) ? undefined : at;
}

type DateParts = [year: string, month: string, day: string, hour: string, minute: string, second: string];

function httpDateParts(text: string, now: number): DateParts | undefined {
  const imf = IMF_FIXDATE.exec(text);
  if (imf) return [imf[3], imf[2], imf[1], imf[4], imf[5], imf[6]] as DateParts;
  const rfc850 = RFC850_DATE.exec(text);
  if (rfc850) {
    // Two-digit years: one more than 50 years ahead is read as the past century (RFC 9110 section 5.6.7).
    const year = 2000 + Number(rfc850[3]);
    const fullYear = year > new Date(now).getUTCFullYear() + 50 ? year - 100 : year;
    return [String(fullYear), rfc850[2], rfc850[1], rfc850[4], rfc850[5], rfc850[6]] as DateParts;
  }
  const asctime = ASCTIME_DATE.exec(text);
  if (asctime) return [asctime[6], asctime[1], asctime[2]?.trim(), asctime[3], asctime[4], asctime[5]] as DateParts;
  return undefined;
}

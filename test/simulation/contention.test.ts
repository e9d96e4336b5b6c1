/** The budget simulation (property.ts, scenario.ts): the 'contention' family of schedules. */

import { simulate } from './property.js';

simulate('contention');

/** The budget simulation (property.ts, scenario.ts): the 'spent' family of schedules. */

import { simulate } from './property.js';

simulate('spent');

/** The budget simulation (property.ts, scenario.ts): the 'liar' family of schedules. */

import { simulate } from './property.js';

simulate('liar');

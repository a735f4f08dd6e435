"""What the Breakout training relies on about the game: its minimal action set and what every ALE action does in it,
the RAM bytes that hold the ball and the paddle, and the paddle controller's mechanics (the scripted player steers
by them)."""

GAME = "breakout"
MINIMAL_ACTIONS = (0, 1, 3, 4)     # ALE actions (= AtariGame action indices) NOOP, FIRE, RIGHT, LEFT
NOOP, FIRE, RIGHT, LEFT = range(len(MINIMAL_ACTIONS))
# For each of the 18 ALE actions, the minimal action it does in Breakout (its index in MINIMAL_ACTIONS).
FULL_TO_MINIMAL = (NOOP, FIRE, NOOP, RIGHT, LEFT, NOOP, RIGHT, LEFT, RIGHT, LEFT,
                   FIRE, RIGHT, LEFT, FIRE, RIGHT, LEFT, RIGHT, LEFT)

# Breakout's RAM (found by correlating RAM bytes with the ball and paddle pixels of the screen).
RAM_BALL_X = 99          # ball's left edge: screen x = RAM - 49 (the ball is 2 pixels wide)
RAM_BALL_Y = 101         # ball's top edge: screen y = RAM + 9; 0 while no ball is in play (serve with FIRE)
RAM_PADDLE_X = 72        # paddle's left edge: screen x = RAM - 47 (16 pixels wide); 55..191
BALL_X_OFFSET, BALL_Y_OFFSET, PADDLE_CENTRE_OFFSET = 49, 9, 39
BALL_LEFT_MIN, BALL_LEFT_MAX = 8, 150       # the ball's left edge between the side walls
HIT_Y = 186              # screen y of the ball's top edge when it meets the paddle (top row 189)
# The ALE drives Breakout's paddle controller: each frame of RIGHT or LEFT moves a potentiometer one step
# within its range ((790196 - 27450) / 2 / 23000 = 16.58 steps each side of the reset position); the paddle
# settles at RAM_PADDLE_X = 146 + 5.6 * steps (clipped to 55..191) and follows with about 2 frames' lag.
PADDLE_STEPS_MAX = (790196 - 27450) / 2 / 23000
PADDLE_RESET_X, PADDLE_PIXELS_PER_STEP, PADDLE_X_MIN, PADDLE_X_MAX = 146, 5.6, 55, 191
PADDLE_LAG_FRAMES = 2

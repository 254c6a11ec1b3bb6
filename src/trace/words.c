/* words.c - the 256 prompt words (see words.h). */
#include "trace/words.h"

static const char *const words[ATR_PROMPT_WORDS] = {
    " the", " of", " and", " to", " in", " is", " for", " on", " that", " with", " as", " it",
    " be", " by", " at", " this", " are", " from", " or", " an", " was", " not", " but",
    " have", " all", " can", " will", " one", " has", " more", " their", " which", " new",
    " also", " were", " about", " other", " time", " they", " out", " some", " its", " only",
    " what", " when", " any", " may", " use", " data", " over", " most", " like", " first",
    " year", " these", " people", " would", " been", " two", " into", " than", " them",
    " there", " high", " then", " such", " well", " back", " way", " make", " many", " just",
    " work", " made", " through", " after", " each", " very", " same", " must", " used",
    " take", " where", " good", " state", " life", " part", " under", " both", " those",
    " still", " while", " since", " great", " last", " world", " long", " system", " should",
    " place", " might", " could", " three", " group", " never", " local", " point", " case",
    " help", " own", " know", " find", " show", " order", " small", " open", " power", " need",
    " home", " large", " set", " end", " line", " every", " found", " public", " right",
    " given", " next", " name", " water", " without", " around", " change", " real", " early",
    " form", " city", " hand", " house", " side", " team", " full", " less", " book", " area",
    " test", " word", " best", " play", " food", " body", " free", " board", " close",
    " clear", " run", " hold", " move", " live", " game", " page", " plan", " room", " sign",
    " view", " step", " level", " past", " keep", " care", " plant", " river", " road",
    " class", " light", " human", " store", " table", " model", " value", " music", " field",
    " note", " paper", " share", " price", " image", " film", " turn", " cost", " type",
    " voice", " sound", " color", " stone", " heart", " north", " south", " west", " east",
    " green", " black", " white", " blue", " red", " gold", " fire", " wind", " rain", " snow",
    " tree", " leaf", " seed", " root", " bird", " fish", " horse", " dog", " cat", " door",
    " wall", " floor", " roof", " bed", " chair", " glass", " cup", " plate", " knife",
    " fork", " milk", " bread", " rice", " salt", " sugar", " tea", " wine", " beer", " egg",
    " meat", " fruit", " apple", " lemon", " grape", " bean", " corn", " wheat", " cloud",
    " star", " moon", " sun", " sky", " sea", " lake", " hill",
};

const char *atr_prompt_word(uint8_t i)
{
    return words[i];
}

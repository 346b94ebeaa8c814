import CFuse
enum FusePlaceholder {}
